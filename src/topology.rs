//! The machine's LLCs and SMT cores, flattened into the arrays the BPF side
//! walks: each LLC's CPUs in ascending order (the order of the kernel's
//! `for_each_cpu_wrap`), every CPU's position in its LLC, and every CPU's
//! hardware threads.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use scx_utils::Topology;

use crate::bpf_intf;

const MAX_CPUS: usize = bpf_intf::SISU_MAX_CPUS as usize;
const MAX_LLCS: usize = bpf_intf::SISU_MAX_LLCS as usize;
const MAX_SMT: usize = bpf_intf::SISU_MAX_SMT as usize;

/// One last-level cache domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Llc {
    /// The kernel's id of the cache, for display.
    pub kernel_id: usize,
    /// Its online CPUs, ascending.
    pub cpus: Vec<usize>,
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
}

impl Layout {
    pub fn new(topo: &Topology) -> Result<Self> {
        let mut llcs: Vec<Llc> = topo
            .all_llcs
            .values()
            .map(|llc| Llc {
                kernel_id: llc.kernel_id,
                cpus: llc.all_cpus.keys().copied().collect(),
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
        Self::from_parts(llcs, siblings)
    }

    fn from_parts(llcs: Vec<Llc>, siblings: BTreeMap<usize, Vec<usize>>) -> Result<Self> {
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
        })
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

    /// A short description, e.g. "2 LLCs x 4 CPUs, SMT off".
    pub fn describe(&self) -> String {
        let mut widths: Vec<usize> = self.llcs.iter().map(|l| l.cpus.len()).collect();
        widths.dedup();
        let shape = if widths.len() == 1 {
            format!("{} LLC(s) x {} CPUs", self.llcs.len(), widths[0])
        } else {
            let list: Vec<String> = self.llcs.iter().map(|l| l.cpus.len().to_string()).collect();
            format!("{} LLCs of {} CPUs", self.llcs.len(), list.join("/"))
        };
        format!("{shape}, SMT {}", if self.smt { "on" } else { "off" })
    }
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
        assert_eq!(l.describe(), "2 LLC(s) x 4 CPUs, SMT off");
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
    }

    #[test]
    fn interleaved_smt_numbering() {
        // Linux often numbers the second threads after all first threads.
        let llcs = vec![Llc {
            kernel_id: 0,
            cpus: vec![0, 1, 2, 3],
        }];
        let siblings = BTreeMap::from([
            (0, vec![0, 2]),
            (2, vec![0, 2]),
            (1, vec![1, 3]),
            (3, vec![1, 3]),
        ]);
        let l = Layout::from_parts(llcs, siblings).unwrap();
        assert!(l.smt);
        assert_eq!(l.sibling_row(2)[..3], [0, 2, -1]);
    }

    #[test]
    fn rejects_what_bpf_cannot_hold() {
        let big = vec![Llc {
            kernel_id: 0,
            cpus: vec![0, MAX_CPUS],
        }];
        assert!(Layout::from_parts(big, BTreeMap::new()).is_err());
        assert!(Layout::from_parts(vec![], BTreeMap::new()).is_err());
        let twice = vec![
            Llc {
                kernel_id: 0,
                cpus: vec![0, 1],
            },
            Llc {
                kernel_id: 1,
                cpus: vec![1, 2],
            },
        ];
        assert!(Layout::from_parts(twice, BTreeMap::new()).is_err());
    }

    #[test]
    fn cpulist_ranges() {
        assert_eq!(cpulist(&[0, 1, 2, 3]), "0-3");
        assert_eq!(cpulist(&[0, 2, 3, 4, 8]), "0,2-4,8");
        assert_eq!(cpulist(&[]), "");
    }
}
