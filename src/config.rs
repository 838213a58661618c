//! What a run of the scheduler starts with: the settings a run may change
//! (sisutil_proto's `control::Settings`, the one type they have from the
//! command line, through a run-time switch, to BPF's configuration) and
//! those only a start sets. Both are checked here, once, for a start and
//! for every switch.

use std::time::Duration;

use scx_utils::libbpf_clap_opts::LibbpfOpts;
use sisutil_proto::control::Settings;

#[derive(Clone, Debug)]
pub struct Config {
    /// What `scx_sisutil set` may change while it runs.
    pub settings: Settings,
    /// SIS_CACHE's and SIS_CURRENT's short, if not the kernel's.
    pub migration_cost: Option<Duration>,
    pub interval: Duration,
    pub slice: Duration,
    pub scan_stats: bool,
    /// The statistics' costly part (--detail-stats).
    pub detail_stats: bool,
    pub wake_affine: bool,
    pub bpf_stats: bool,
    pub verbose: bool,
    pub exit_dump_len: u32,
    pub libbpf: LibbpfOpts,
}

impl Config {
    /// Why @settings cannot run under this start's options, if they
    /// cannot: the shadow rules are counted against what the active scan
    /// found where an idle CPU existed, which only the detailed statistics
    /// look for.
    pub fn admits(&self, settings: &Settings) -> Result<(), String> {
        settings.check()?;
        if self.detail_stats && !self.scan_stats {
            return Err("--detail-stats needs the scan statistics (drop --no-scan-stats)".into());
        }
        if !settings.shadow.is_empty() && !self.scan_stats {
            return Err("the shadow rules need the scan statistics (drop --no-scan-stats)".into());
        }
        if !settings.shadow.is_empty() && !self.detail_stats {
            return Err(
                "the shadow rules need the detailed statistics (start with --detail-stats)".into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shadow_needs_the_detailed_scan_statistics() {
        let mut c = Config {
            settings: Settings::default(),
            migration_cost: None,
            interval: Duration::from_millis(16),
            slice: Duration::from_millis(3),
            scan_stats: false,
            detail_stats: false,
            wake_affine: true,
            bpf_stats: false,
            verbose: false,
            exit_dump_len: 0,
            libbpf: LibbpfOpts::default(),
        };
        assert!(c.admits(&c.settings).is_ok());
        let shadowed = Settings {
            shadow: "prop".parse().unwrap(),
            ..Settings::default()
        };
        assert!(c.admits(&shadowed).unwrap_err().contains("--no-scan-stats"));
        c.scan_stats = true;
        assert!(c.admits(&shadowed).unwrap_err().contains("--detail-stats"));
        c.detail_stats = true;
        assert!(c.admits(&shadowed).is_ok());
        c.scan_stats = false;
        let plain = Settings::default();
        assert!(c.admits(&plain).unwrap_err().contains("--no-scan-stats"));
    }
}
