//! The machine's LLCs, SMT cores, NUMA nodes and packages, flattened into
//! the arrays the BPF side walks: each LLC's CPUs in ascending order (the
//! order of the kernel's `for_each_cpu_wrap`), every CPU's position in its
//! LLC, every CPU's hardware threads, and how far every LLC is from every
//! other, in the levels of the kernel's scheduling domains.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use scx_utils::Topology;

use crate::intf;

const MAX_CPUS: usize = intf::SISU_MAX_CPUS as usize;
const MAX_LLCS: usize = intf::SISU_MAX_LLCS as usize;
const MAX_SMT: usize = intf::SISU_MAX_SMT as usize;
// LLC indices reach BPF as bytes (llc_near).
const _: () = assert!(MAX_LLCS <= 256);
/// The kernel's node_reclaim_distance (RECLAIM_DISTANCE): NUMA domains
/// spanning a larger distance lose SD_WAKE_AFFINE.
const RECLAIM_DISTANCE: usize = 30;
/// The distances the kernel assumes without a SLIT table.
const LOCAL_DISTANCE: usize = 10;
const REMOTE_DISTANCE: usize = 20;

/// How far apart two LLCs are: the scheduling-domain level that first
/// spans both (enum sisu_span).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Span {
    Llc,
    Node,
    Package,
    Remote,
}

impl Span {
    pub fn bpf(self) -> u32 {
        match self {
            Span::Llc => intf::sisu_span_SISU_SPAN_LLC,
            Span::Node => intf::sisu_span_SISU_SPAN_NODE,
            Span::Package => intf::sisu_span_SISU_SPAN_PACKAGE,
            Span::Remote => intf::sisu_span_SISU_SPAN_REMOTE,
        }
    }
}

/// One last-level cache domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Llc {
    /// The kernel's id of the cache, for display.
    pub kernel_id: usize,
    /// Its online CPUs, ascending.
    pub cpus: Vec<usize>,
    /// The kernel's id of its NUMA node.
    pub node: usize,
    /// The kernel's id of its package (socket).
    pub package: usize,
}

/// The topology as the scheduler uses it. LLCs are numbered densely in
/// the order of their first CPU.
#[derive(Clone, Debug)]
pub struct Layout {
    pub llcs: Vec<Llc>,
    /// Dense LLC index per CPU id; `None` for CPUs that are not online.
    pub cpu_llc: Vec<Option<usize>>,
    /// Hardware threads of each CPU's core (itself included), ascending.
    pub siblings: BTreeMap<usize, Vec<usize>>,
    /// Whether any core has more than one thread.
    pub smt: bool,
    /// NUMA distance between nodes, by the kernel's node ids.
    pub distance: BTreeMap<(usize, usize), usize>,
}

impl Layout {
    pub fn new(topo: &Topology) -> Result<Self> {
        let mut llcs: Vec<Llc> = topo
            .all_llcs
            .values()
            .map(|llc| Llc {
                kernel_id: llc.kernel_id,
                cpus: llc.all_cpus.keys().copied().collect(),
                node: llc.node_id,
                package: llc.all_cpus.values().next().map_or(0, |c| c.package_id),
            })
            .filter(|llc| !llc.cpus.is_empty())
            .collect();
        llcs.sort_by_key(|llc| llc.cpus[0]);

        let mut siblings = BTreeMap::new();
        for core in topo.all_cores.values() {
            let threads: Vec<usize> = core.cpus.keys().copied().collect();
            for &cpu in &threads {
                siblings.insert(cpu, threads.clone());
            }
        }
        let mut distance = BTreeMap::new();
        for (&a, node) in &topo.nodes {
            for (b, &d) in node.distance.iter().enumerate() {
                distance.insert((a, b), d);
            }
        }
        Self::from_parts(llcs, siblings, distance)
    }

    fn from_parts(
        llcs: Vec<Llc>,
        siblings: BTreeMap<usize, Vec<usize>>,
        distance: BTreeMap<(usize, usize), usize>,
    ) -> Result<Self> {
        if llcs.is_empty() {
            bail!("the topology has no online CPU");
        }
        if llcs.len() > MAX_LLCS {
            bail!("{} LLCs exceed the supported {MAX_LLCS}", llcs.len());
        }
        let max_cpu = llcs.iter().flat_map(|l| l.cpus.iter()).max().copied();
        let nr_ids = max_cpu.map_or(0, |c| c + 1);
        if nr_ids > MAX_CPUS {
            bail!(
                "CPU id {} exceeds the supported {MAX_CPUS} CPUs",
                nr_ids - 1
            );
        }
        let mut cpu_llc = vec![None; nr_ids];
        for (idx, llc) in llcs.iter().enumerate() {
            for &cpu in &llc.cpus {
                if cpu_llc[cpu].replace(idx).is_some() {
                    bail!("CPU {cpu} belongs to two LLCs");
                }
            }
        }
        if let Some((cpu, t)) = siblings.iter().find(|(_, t)| t.len() > MAX_SMT) {
            bail!(
                "CPU {cpu}'s core has {} threads; at most {MAX_SMT} are supported",
                t.len()
            );
        }
        let smt = siblings.values().any(|t| t.len() > 1);
        Ok(Self {
            llcs,
            cpu_llc,
            siblings,
            smt,
            distance,
        })
    }

    /// NUMA distance between the nodes of LLCs @a and @b. A node without
    /// a distance table gets the kernel's defaults.
    pub fn distance(&self, a: usize, b: usize) -> usize {
        let (na, nb) = (self.llcs[a].node, self.llcs[b].node);
        let fallback = if na == nb {
            LOCAL_DISTANCE
        } else {
            REMOTE_DISTANCE
        };
        self.distance.get(&(na, nb)).copied().unwrap_or(fallback)
    }

    /// The level of the kernel's domains that first spans LLCs @a and @b.
    /// Nodes normally nest in packages; a node spanning packages still
    /// shares memory, and counts as a node.
    pub fn span(&self, a: usize, b: usize) -> Span {
        let (x, y) = (&self.llcs[a], &self.llcs[b]);
        if a == b {
            Span::Llc
        } else if x.node == y.node {
            Span::Node
        } else if x.package == y.package {
            Span::Package
        } else {
            Span::Remote
        }
    }

    /// Every LLC in the order the CPUs of @a look at them for work: @a,
    /// then by span, then by NUMA distance. Ties go in index order from
    /// @a on, so that LLCs at one distance are not all drained by the
    /// same neighbour first.
    pub fn nearest(&self, a: usize) -> Vec<usize> {
        let n = self.llcs.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&b| (self.span(a, b), self.distance(a, b), (b + n - a) % n));
        order
    }

    /// Whether a waker in LLC @a may draw a wakee whose prev is in @b.
    pub fn affine(&self, a: usize, b: usize) -> bool {
        self.distance(a, b) <= RECLAIM_DISTANCE
    }

    /// The kernel's imb_numa_nr for LLC @a: how many tasks its node runs
    /// before a new task looks at other nodes. It is the number of LLCs in
    /// the first domain above the LLC (the node when it holds several, else
    /// the nearest level that does), so that new tasks fill a node until
    /// two would share an LLC there while another node's stand idle.
    pub fn numa_imbalance(&self, a: usize) -> usize {
        let nearest = (0..self.llcs.len())
            .filter(|&b| b != a)
            .map(|b| self.span(a, b))
            .min();
        match nearest {
            Some(span) => {
                1 + (0..self.llcs.len())
                    .filter(|&b| b != a && self.span(a, b) == span)
                    .count()
            }
            None => 1,
        }
    }

    /// The kernel's imb_numa_nr of the domain of @a's CPUs that first
    /// spans @span. A level above the first domain over the LLC allows
    /// that domain's count times how many spans of the first NUMA domain
    /// above it fit in the level (build_sched_domains()): the allowance
    /// grows with the level's width, so that each first-NUMA-domain's
    /// worth of CPUs may hold numa_imbalance() extra tasks.
    pub fn numa_imbalance_at(&self, a: usize, span: Span) -> usize {
        let others = || (0..self.llcs.len()).filter(move |&b| b != a);
        let base = self.numa_imbalance(a);
        let Some(first) = others().map(|b| self.span(a, b)).min() else {
            return base;
        };
        if span <= first {
            return base;
        }
        let width = |level: Span| -> usize {
            (0..self.llcs.len())
                .filter(|&b| self.span(a, b) <= level)
                .map(|b| self.llcs[b].cpus.len())
                .sum()
        };
        // The first NUMA domain strictly above the first one, or that one.
        let numa = others()
            .map(|b| self.span(a, b))
            .filter(|&s| s > first && s >= Span::Package)
            .min()
            .unwrap_or(first);
        base * (width(span) / width(numa)).max(1)
    }

    /// Each node's dense package index, and each package's CPU count. A
    /// node's package is that of its first LLC.
    pub fn node_packages(&self) -> (Vec<usize>, Vec<usize>) {
        let nodes = self.node_ids();
        let mut packages: Vec<usize> = self.llcs.iter().map(|l| l.package).collect();
        packages.sort_unstable();
        packages.dedup();
        let dense = |pkg: usize| packages.iter().position(|&p| p == pkg).unwrap_or(0);
        let node_pkg = nodes
            .iter()
            .map(|&n| {
                self.llcs
                    .iter()
                    .find(|l| l.node == n)
                    .map_or(0, |l| dense(l.package))
            })
            .collect::<Vec<_>>();
        let mut width = vec![0; packages.len()];
        for l in &self.llcs {
            let node = nodes.iter().position(|&n| n == l.node).unwrap_or(0);
            width[node_pkg[node]] += l.cpus.len();
        }
        (node_pkg, width)
    }

    fn count_distinct(&self, key: impl Fn(&Llc) -> usize) -> usize {
        let mut ids: Vec<usize> = self.llcs.iter().map(key).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }

    pub fn nr_nodes(&self) -> usize {
        self.node_ids().len()
    }

    pub fn nr_packages(&self) -> usize {
        self.count_distinct(|l| l.package)
    }

    pub fn nr_cpus(&self) -> usize {
        self.llcs.iter().map(|l| l.cpus.len()).sum()
    }

    /// All LLCs' CPUs one after the other, and where each LLC starts.
    pub fn flat_cpus(&self) -> (Vec<usize>, Vec<usize>) {
        let mut flat = Vec::with_capacity(self.nr_cpus());
        let mut first = Vec::with_capacity(self.llcs.len());
        for llc in &self.llcs {
            first.push(flat.len());
            flat.extend(&llc.cpus);
        }
        (flat, first)
    }

    /// The kernel's ids of the nodes, ascending: a node's dense index is
    /// its place here.
    pub fn node_ids(&self) -> Vec<usize> {
        let mut ids: Vec<usize> = self.llcs.iter().map(|l| l.node).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Each LLC's dense node index, and every node's CPUs ascending, one
    /// node after the other, with where each node starts.
    pub fn flat_node_cpus(&self) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
        let ids = self.node_ids();
        let llc_node = self
            .llcs
            .iter()
            .map(|l| ids.iter().position(|&n| n == l.node).unwrap_or(0))
            .collect();
        let (mut flat, mut first) = (Vec::new(), Vec::new());
        for &id in &ids {
            first.push(flat.len());
            let mut cpus: Vec<usize> = self
                .llcs
                .iter()
                .filter(|l| l.node == id)
                .flat_map(|l| l.cpus.iter().copied())
                .collect();
            cpus.sort_unstable();
            flat.extend(cpus);
        }
        (llc_node, flat, first)
    }

    /// Position of each online CPU in its LLC's list.
    pub fn cpu_positions(&self) -> BTreeMap<usize, usize> {
        self.llcs
            .iter()
            .flat_map(|llc| llc.cpus.iter().enumerate().map(|(pos, &cpu)| (cpu, pos)))
            .collect()
    }

    /// A CPU's core as BPF wants it: threads ascending, -1 padded.
    pub fn sibling_row(&self, cpu: usize) -> [i32; MAX_SMT] {
        let mut row = [-1; MAX_SMT];
        let threads = self.siblings.get(&cpu).map_or(&[][..], |t| &t[..]);
        let threads = if threads.is_empty() {
            &[cpu][..]
        } else {
            threads
        };
        for (slot, &t) in row.iter_mut().zip(threads) {
            *slot = t as i32;
        }
        row
    }

    /// A short description, e.g. "2 nodes x 2 LLCs x 4 CPUs, SMT off";
    /// packages are named when they hold more than one node.
    pub fn describe(&self) -> String {
        let (nodes, packages) = (self.nr_nodes(), self.nr_packages());
        let mut widths: Vec<usize> = self.llcs.iter().map(|l| l.cpus.len()).collect();
        widths.dedup();
        let per_node = self.llcs.len() / nodes;
        let even = (0..self.llcs.len()).all(|i| {
            self.llcs
                .iter()
                .filter(|l| l.node == self.llcs[i].node)
                .count()
                == per_node
        });
        let mut shape = String::new();
        if packages > 1 && packages < nodes {
            shape += &format!("{packages} packages x ");
        }
        if widths.len() == 1 && even {
            shape += &format!(
                "{} x {} x {} CPUs",
                plural(nodes, "node"),
                plural(per_node, "LLC"),
                widths[0]
            );
        } else {
            let list: Vec<String> = self.llcs.iter().map(|l| l.cpus.len().to_string()).collect();
            shape += &format!(
                "{}, {} LLCs of {} CPUs",
                plural(nodes, "node"),
                self.llcs.len(),
                list.join("/")
            );
        }
        format!("{shape}, SMT {}", if self.smt { "on" } else { "off" })
    }
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// A CPU list in the kernel's range format, e.g. "0-3,8".
pub fn cpulist(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use scx_utils::testutils::make_test_topo;

    #[test]
    fn two_llcs_of_four() {
        let (topo, n) = make_test_topo(1, 2, 4, 1);
        assert_eq!(n, 8);
        let l = Layout::new(&topo).unwrap();
        assert_eq!(l.llcs.len(), 2);
        assert_eq!(l.llcs[0].cpus, vec![0, 1, 2, 3]);
        assert_eq!(l.llcs[1].cpus, vec![4, 5, 6, 7]);
        assert_eq!(l.cpu_llc[5], Some(1));
        assert!(!l.smt);
        let (flat, first) = l.flat_cpus();
        assert_eq!(flat, vec![0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(first, vec![0, 4]);
        assert_eq!(l.cpu_positions()[&6], 2);
        assert_eq!(l.sibling_row(6)[..2], [6, -1]);
        assert_eq!(l.describe(), "1 node x 2 LLCs x 4 CPUs, SMT off");
        assert_eq!(l.nearest(1), vec![1, 0]);
        assert_eq!(l.span(0, 1), Span::Node);
    }

    #[test]
    fn smt_pairs_in_one_llc() {
        let (topo, _) = make_test_topo(1, 1, 2, 2);
        let l = Layout::new(&topo).unwrap();
        assert_eq!(l.llcs.len(), 1);
        assert_eq!(l.llcs[0].cpus, vec![0, 1, 2, 3]);
        assert!(l.smt);
        assert_eq!(l.sibling_row(0)[..3], [0, 1, -1]);
        assert_eq!(l.sibling_row(3)[..3], [2, 3, -1]);
    }

    #[test]
    fn numa_nodes_keep_llcs_apart() {
        let (topo, n) = make_test_topo(2, 2, 2, 2);
        assert_eq!(n, 16);
        let l = Layout::new(&topo).unwrap();
        assert_eq!(l.llcs.len(), 4);
        for (i, llc) in l.llcs.iter().enumerate() {
            assert_eq!(llc.cpus, (i * 4..i * 4 + 4).collect::<Vec<_>>());
            assert!(llc.cpus.iter().all(|&c| l.cpu_llc[c] == Some(i)));
        }
        assert_eq!(l.span(0, 1), Span::Node);
        assert_eq!(l.span(1, 2), Span::Remote);
        assert_eq!(l.describe(), "2 nodes x 2 LLCs x 4 CPUs, SMT on");
    }

    #[test]
    fn interleaved_smt_numbering() {
        // Linux often numbers the second threads after all first threads.
        let llcs = vec![llc(0, vec![0, 1, 2, 3], 0, 0)];
        let siblings = BTreeMap::from([
            (0, vec![0, 2]),
            (2, vec![0, 2]),
            (1, vec![1, 3]),
            (3, vec![1, 3]),
        ]);
        let l = Layout::from_parts(llcs, siblings, BTreeMap::new()).unwrap();
        assert!(l.smt);
        assert_eq!(l.sibling_row(2)[..3], [0, 2, -1]);
    }

    #[test]
    fn rejects_what_bpf_cannot_hold() {
        let big = vec![llc(0, vec![0, MAX_CPUS], 0, 0)];
        assert!(Layout::from_parts(big, BTreeMap::new(), BTreeMap::new()).is_err());
        assert!(Layout::from_parts(vec![], BTreeMap::new(), BTreeMap::new()).is_err());
        let twice = vec![llc(0, vec![0, 1], 0, 0), llc(1, vec![1, 2], 0, 0)];
        assert!(Layout::from_parts(twice, BTreeMap::new(), BTreeMap::new()).is_err());
    }

    fn llc(kernel_id: usize, cpus: Vec<usize>, node: usize, package: usize) -> Llc {
        Llc {
            kernel_id,
            cpus,
            node,
            package,
        }
    }

    /// 2 packages x 2 nodes x 2 LLCs x 2 CPUs, with AMD's distances
    /// (NPS2): 12 between the nodes of a package, 32 across packages.
    fn nps2() -> Layout {
        let llcs = (0..8)
            .map(|i| llc(i, vec![2 * i, 2 * i + 1], i / 2, i / 4))
            .collect();
        let mut distance = BTreeMap::new();
        for a in 0..4 {
            for b in 0..4 {
                let d = match (a == b, a / 2 == b / 2) {
                    (true, _) => 10,
                    (false, true) => 12,
                    _ => 32,
                };
                distance.insert((a, b), d);
            }
        }
        Layout::from_parts(llcs, BTreeMap::new(), distance).unwrap()
    }

    #[test]
    fn spans_follow_nodes_and_packages() {
        let l = nps2();
        assert_eq!(l.span(2, 2), Span::Llc);
        assert_eq!(l.span(2, 3), Span::Node);
        assert_eq!(l.span(2, 0), Span::Package);
        assert_eq!(l.span(2, 5), Span::Remote);
        assert_eq!(l.nr_nodes(), 4);
        let (llc_node, flat, first) = l.flat_node_cpus();
        assert_eq!(llc_node, vec![0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(flat, (0..16).collect::<Vec<_>>());
        assert_eq!(first, vec![0, 4, 8, 12]);
        assert_eq!(l.nr_packages(), 2);
        assert_eq!(
            l.describe(),
            "2 packages x 4 nodes x 2 LLCs x 2 CPUs, SMT off"
        );
    }

    #[test]
    fn nearest_walks_out_by_distance() {
        let l = nps2();
        // Own LLC, its node's other LLC, the package's other node, then
        // the far package from the next LLC on.
        assert_eq!(l.nearest(2), vec![2, 3, 0, 1, 4, 5, 6, 7]);
        assert_eq!(l.nearest(7), vec![7, 6, 4, 5, 0, 1, 2, 3]);
        for a in 0..8 {
            let order = l.nearest(a);
            let spans: Vec<Span> = order.iter().map(|&b| l.span(a, b)).collect();
            assert!(spans.windows(2).all(|w| w[0] <= w[1]), "{a}: {spans:?}");
        }
    }

    #[test]
    fn wake_affine_stops_beyond_reclaim_distance() {
        let l = nps2();
        assert!(l.affine(0, 1));
        assert!(l.affine(0, 3), "12 is within node_reclaim_distance");
        assert!(!l.affine(0, 4), "32 is beyond it");
    }

    #[test]
    fn numa_imbalance_counts_the_llcs_above_the_llc() {
        // NPS2: the node's two LLCs.
        assert!((0..8).all(|a| nps2().numa_imbalance(a) == 2));
        // An LLC per node, two nodes a package (NPS4 in miniature): the
        // package's LLCs.
        let llcs = (0..4).map(|i| llc(i, vec![i], i, i / 2)).collect();
        let l = Layout::from_parts(llcs, BTreeMap::new(), BTreeMap::new()).unwrap();
        assert_eq!(l.numa_imbalance(0), 2);
        // An LLC per package, as the LxC shapes have: all of them.
        let llcs = (0..3).map(|i| llc(i, vec![i], i, i)).collect();
        let l = Layout::from_parts(llcs, BTreeMap::new(), BTreeMap::new()).unwrap();
        assert_eq!(l.numa_imbalance(1), 3);
        let one = vec![llc(0, vec![0, 1], 0, 0)];
        let l = Layout::from_parts(one, BTreeMap::new(), BTreeMap::new()).unwrap();
        assert_eq!(l.numa_imbalance(0), 1);
    }

    #[test]
    fn numa_imbalance_grows_with_the_level() {
        // NPS2: the node's 2 LLCs, within the package and twice that
        // across (the first NUMA domain is the package of 8 CPUs).
        let l = nps2();
        assert_eq!(l.numa_imbalance_at(0, Span::Node), 2);
        assert_eq!(l.numa_imbalance_at(0, Span::Package), 2);
        assert_eq!(l.numa_imbalance_at(0, Span::Remote), 4);
        // A node per socket (NPS1): the node's LLCs at every level.
        let llcs = (0..8)
            .map(|i| llc(i, vec![2 * i, 2 * i + 1], i / 4, i / 4))
            .collect();
        let l = Layout::from_parts(llcs, BTreeMap::new(), BTreeMap::new()).unwrap();
        assert_eq!(l.numa_imbalance_at(5, Span::Remote), 4);
        // An LLC per node, four to a package (NPS4): the package's LLCs,
        // and the same across, where the first NUMA domain spans all.
        let llcs = (0..8).map(|i| llc(i, vec![i], i, i / 4)).collect();
        let l = Layout::from_parts(llcs, BTreeMap::new(), BTreeMap::new()).unwrap();
        assert_eq!(l.numa_imbalance_at(0, Span::Package), 4);
        assert_eq!(l.numa_imbalance_at(0, Span::Remote), 4);
    }

    #[test]
    fn nodes_know_their_packages() {
        let (node_pkg, width) = nps2().node_packages();
        assert_eq!(node_pkg, vec![0, 0, 1, 1]);
        assert_eq!(width, vec![8, 8]);
    }

    #[test]
    fn uneven_shapes_list_their_llcs() {
        let llcs = vec![llc(0, vec![0, 1], 0, 0), llc(1, vec![2, 3, 4], 1, 1)];
        let l = Layout::from_parts(llcs, BTreeMap::new(), BTreeMap::new()).unwrap();
        assert_eq!(l.describe(), "2 nodes, 2 LLCs of 2/3 CPUs, SMT off");
        assert_eq!(l.distance(0, 1), REMOTE_DISTANCE);
        assert!(l.affine(0, 1));
    }

    #[test]
    fn cpulist_ranges() {
        assert_eq!(cpulist(&[0, 1, 2, 3]), "0-3");
        assert_eq!(cpulist(&[0, 2, 3, 4, 8]), "0,2-4,8");
        assert_eq!(cpulist(&[]), "");
    }
}
