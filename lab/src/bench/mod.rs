//! The A/B harness: runs a matrix of real benchmarks under several arms,
//! arms interleaved in every iteration of every point, and prints, saves
//! and plots the comparison. It is a client of the scheduler (it starts it,
//! switches its policy at run time and reads its statistics), never a
//! second scheduler.

pub mod arms;
pub mod cite;
pub mod fidelity;
#[cfg(test)]
mod fixture;
mod layouts;
mod options;
pub mod order;
pub mod plot;
pub mod pooled;
pub mod rank;
pub mod report;
pub mod results;
mod resume;
mod run;
pub mod search;
pub mod stat;
pub mod study;
mod table;
pub mod verdict;
pub mod workload;

use std::path::Path;

use anyhow::{anyhow, Result};
use log::warn;

pub use options::BenchOpts;
pub use run::run;

use results::Results;

/// `compare A B`.
pub fn compare(a: &Path, b: &Path, alpha: f64) -> Result<()> {
    let (ra, rb) = (Results::load(a)?, Results::load(b)?);
    print!("{}", report::compare(&ra, &rb, alpha));
    Ok(())
}

/// `plot RESULTS`: the report and plots again, from a results file.
pub fn replot(path: &Path, out: Option<&Path>) -> Result<()> {
    let r = Results::load(path)?;
    let dir = out
        .map(Path::to_path_buf)
        .or_else(|| path.parent().map(|p| p.join("plots")))
        .ok_or_else(|| anyhow!("no folder for the plots"))?;
    let files = plot::write_all(&r, &dir)?;
    print!("{}", report::text(&r));
    print!("{}", cite::declared_section(&r, path));
    if files.is_empty() {
        warn!("nothing to plot");
    }
    println!("{} plot(s) in {}", files.len(), dir.display());
    Ok(())
}
