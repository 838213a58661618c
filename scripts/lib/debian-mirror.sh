# Sourced by the scripts that add an apt source. Prints the URI of the
# machine's own Debian archive (the one that serves its release suite, not
# the security archive), read from its apt configuration, so that a source
# we add goes through the same mirror, proxy or snapshot as the system's.
debian_mirror() {
	local f uri
	# deb822 stanzas: a URIs line whose stanza also lists a plain release
	# suite (not -security) and the Debian keyring.
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -r $f ]] || continue
		uri=$(awk '
			/^[[:space:]]*$/ { if (u != "" && s && k) { print u; exit } u = ""; s = 0; k = 0; next }
			/^URIs:/ { u = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i !~ /-security$/) s = 1 }
			/^Signed-By:.*debian-archive-keyring/ { k = 1 }
			END { if (u != "" && s && k) print u }
		' "$f" | head -n1)
		[[ -n $uri ]] && {
			echo "${uri%/}"
			return 0
		}
	done
	# One-line sources: the first deb line whose suite is not -security.
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -r $f ]] || continue
		uri=$(awk '$1 == "deb" {
			i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			if ($(i + 1) !~ /-security$/ && $i ~ /debian/) { print $i; exit }
		}' "$f")
		[[ -n $uri ]] && {
			echo "${uri%/}"
			return 0
		}
	done
	return 1
}
