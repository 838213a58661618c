//! The VM shapes the lab's scripts boot: one grammar, read here and
//! nowhere else (`scripts/vm.sh` and `scripts/study.sh` ask
//! `sisutil-lab shape`, and the study's summary names NUMA modes by it).
//!
//! - `LxC[xT]`: L LLCs of C cores of T threads, each LLC a socket and a
//!   NUMA node;
//! - `SsLlCc[Tt][-npsN]`: S sockets of L LLCs (dies) of C cores of T
//!   threads, N NUMA nodes per socket as AMD's NPS modes make them (1, 2
//!   or 4; N must divide L).

use std::fmt::Write as _;

use anyhow::{bail, Result};

/// The most vCPUs a guest may have (QEMU's q35 limit with an IOMMU).
pub const MAX_VCPUS: u32 = 288;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub sockets: u32,
    /// LLCs per socket.
    pub dies: u32,
    /// Cores per LLC.
    pub cores: u32,
    pub threads: u32,
    /// NUMA nodes per socket.
    pub nps: u32,
    /// Written in the long form (sockets of dies), whose node distances
    /// are AMD's rather than QEMU's default.
    pub long: bool,
}

/// The numbers of "2s4l4c2t-nps2" after each letter: S, L, C, T and N.
fn long_form(s: &str) -> Option<(u32, u32, u32, u32, u32)> {
    let (body, nps) = match s.split_once("-nps") {
        Some((b, n)) => (b, n.parse().ok()?),
        None => (s, 1),
    };
    let mut nums = Vec::new();
    let mut rest = body;
    for letter in ['s', 'l', 'c', 't'] {
        match rest.split_once(letter) {
            Some((n, r)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                nums.push(n.parse().ok()?);
                rest = r;
            }
            // Threads are optional.
            _ if letter == 't' && rest.is_empty() => nums.push(1),
            _ => return None,
        }
    }
    rest.is_empty()
        .then(|| (nums[0], nums[1], nums[2], nums[3], nps))
}

impl Shape {
    pub fn parse(s: &str) -> Result<Shape> {
        let short: Vec<&str> = s.split('x').collect();
        let shape = if (2..=3).contains(&short.len())
            && short
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            let n = |i: usize| short.get(i).map_or(Some(1), |v| v.parse().ok());
            let (Some(l), Some(c), Some(t)) = (n(0), n(1), n(2)) else {
                bail!("bad shape {s:?}: a number is too large");
            };
            Shape {
                sockets: l,
                dies: 1,
                cores: c,
                threads: t,
                nps: 1,
                long: false,
            }
        } else if let Some((sk, l, c, t, nps)) = long_form(s) {
            Shape {
                sockets: sk,
                dies: l,
                cores: c,
                threads: t,
                nps,
                long: true,
            }
        } else {
            bail!("bad shape {s:?} (want LxC, LxCxT or SsLlCc[Tt][-npsN], e.g. 2x4, 1x8x2, 2s4l4c-nps2)");
        };
        for (what, v) in [
            ("sockets", shape.sockets),
            ("LLCs", shape.dies),
            ("cores", shape.cores),
            ("threads", shape.threads),
        ] {
            if v == 0 {
                bail!("shape {s}: {what} must be at least 1");
            }
        }
        if ![1, 2, 4].contains(&shape.nps) {
            bail!("shape {s}: NPS must be 1, 2 or 4");
        }
        if shape.dies % shape.nps != 0 {
            bail!(
                "shape {s}: NPS{} does not divide {} LLCs per socket",
                shape.nps,
                shape.dies
            );
        }
        let cpus = shape.cpus_checked();
        match cpus {
            Some(n) if n <= u64::from(MAX_VCPUS) => Ok(shape),
            _ => bail!("shape {s} gives more than {MAX_VCPUS} CPUs, the most a guest may have"),
        }
    }

    fn cpus_checked(&self) -> Option<u64> {
        [self.dies, self.cores, self.threads]
            .iter()
            .try_fold(u64::from(self.sockets), |a, &b| a.checked_mul(u64::from(b)))
    }

    pub fn cpus(&self) -> u32 {
        self.sockets * self.dies * self.cores * self.threads
    }

    pub fn nodes(&self) -> u32 {
        self.sockets * self.nps
    }

    /// The machine this mode is of ("2s4l4c" for "2s4l4c-nps2"), and the
    /// mode, for shapes written with one.
    pub fn numa_mode(name: &str) -> Option<(&str, &str)> {
        let (base, mode) = name.rsplit_once("-nps")?;
        Shape::parse(name).ok()?;
        Some((base, mode))
    }

    /// What vm.sh builds the guest from, as shell assignments.
    pub fn shell(&self) -> String {
        let mut out = String::new();
        for (k, v) in [
            ("SOCKETS", self.sockets),
            ("DIES", self.dies),
            ("CORES", self.cores),
            ("THREADS", self.threads),
            ("NPS", self.nps),
            ("LONG", u32::from(self.long)),
            ("NCPUS", self.cpus()),
            ("NODES", self.nodes()),
            ("PER_NODE", self.cpus() / self.nodes()),
        ] {
            let _ = writeln!(out, "{k}={v}");
        }
        out
    }
}

/// `sisutil-lab shape SHAPE`.
pub fn main(shape: &str) -> Result<()> {
    print!("{}", Shape::parse(shape)?.shell());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms() {
        let s = Shape::parse("2x4").unwrap();
        assert_eq!(
            (s.sockets, s.dies, s.cores, s.threads, s.nps),
            (2, 1, 4, 1, 1)
        );
        assert!(!s.long);
        assert_eq!((s.cpus(), s.nodes()), (8, 2));
        let s = Shape::parse("1x8x2").unwrap();
        assert_eq!((s.cpus(), s.threads), (16, 2));
        let s = Shape::parse("2s4l4c-nps2").unwrap();
        assert_eq!(
            (s.sockets, s.dies, s.cores, s.threads, s.nps),
            (2, 4, 4, 1, 2)
        );
        assert!(s.long);
        assert_eq!((s.cpus(), s.nodes()), (32, 4));
        let s = Shape::parse("2s8l8c2t-nps4").unwrap();
        assert_eq!((s.cpus(), s.nodes()), (256, 8));
        assert_eq!(Shape::parse("2s2l2c").unwrap().nps, 1);
        assert!(s.shell().contains("NCPUS=256\n") && s.shell().contains("PER_NODE=32\n"));
    }

    #[test]
    fn bad_shapes_say_why() {
        for (bad, why) in [
            ("2x", "bad shape"),
            ("x4", "bad shape"),
            ("2x4x2x2", "bad shape"),
            ("2s4l", "bad shape"),
            ("2s4l4c-nps3", "NPS must be 1, 2 or 4"),
            ("2s2l2c-nps4", "does not divide"),
            ("0x4", "sockets must be at least 1"),
            ("2s8l8c4t", "more than 288 CPUs"),
            ("99999999999x2", "too large"),
            ("4x4 ", "bad shape"),
        ] {
            let e = Shape::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn numa_modes_by_name() {
        assert_eq!(Shape::numa_mode("2s4l4c-nps2"), Some(("2s4l4c", "2")));
        assert_eq!(Shape::numa_mode("1x16"), None);
        assert_eq!(Shape::numa_mode("ab-npsx"), None);
    }
}
