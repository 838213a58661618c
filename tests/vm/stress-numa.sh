# The stress test (stress.sh) on a shape with every distance: two sockets
# of two LLCs of two cores, NPS2, so that each LLC is a node and its
# socket's other node is 12 away, the other socket's 32. For the two
# policies that walk the distances (the built-in selection's walk is the
# kernel's), then switching.
# shape: 2s2l2c-nps2
# timeout: 900
STRESS_SECS=15
STRESS_POLICIES="util prop"
. /tests/vm/stress.sh
