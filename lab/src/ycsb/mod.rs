//! The key-value load, YCSB's core workloads on a real database (the review
//! ran ycsb-mongodb; MongoDB is not in Debian, PostgreSQL is). A table of
//! YCSB's shape (a key and ten 100-byte fields) is loaded before the timed
//! phase; then N clients, each its own connection and pgbench thread as
//! YCSB's client threads are, read a whole record or update one field of
//! it, the key drawn from a zipfian distribution scrambled by a hash, so
//! the popular keys lie all over the table:
//!   A  50 % reads, 50 % updates     B  95 % reads, 5 % updates
//!   C  reads only
//! YCSB's zipfian constant is 0.99; pgbench takes 1.001 and up, the
//! closest it allows. Reported: operations per second and the latency
//! percentiles, from pgbench's log of every transaction.

pub mod postgres;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use postgres::Server;

/// YCSB's record: ten fields.
const FIELDS: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// 50 % reads, 50 % updates (YCSB workload A)
    A,
    /// 95 % reads, 5 % updates (YCSB workload B)
    B,
    /// reads only (YCSB workload C)
    C,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::A => "a",
            Workload::B => "b",
            Workload::C => "c",
        }
    }

    /// pgbench's weights: the read script's, and each field's update
    /// script's (an update writes one of the ten fields, as YCSB's does).
    fn weights(self) -> (u32, u32) {
        match self {
            Workload::A => (10, 1),
            Workload::B => (190, 1),
            Workload::C => (1, 0),
        }
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    #[arg(long, value_enum, default_value_t = Workload::A)]
    pub workload: Workload,
    /// Client connections, each with its own thread
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub clients: u64,
    /// Length of the timed phase
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub seconds: u64,
    /// Records in the table
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=100_000_000))]
    pub records: u64,
    /// The socket folder of a server already loaded with --records records
    /// (by the A/B harness); without it, one is started, loaded and stopped
    #[arg(long)]
    pub host: Option<PathBuf>,
    /// PostgreSQL's programs (default: the newest under /usr/lib/postgresql)
    #[arg(long)]
    pub pg_bin: Option<PathBuf>,
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

/// What a run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub ops: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub transactions: u64,
}

fn zipfian_key() -> &'static str {
    "\\set r random_zipfian(0, :records - 1, 1.001)\n\\set k abs(hash_fnv1a(:r)) % :records\n"
}

fn read_script() -> String {
    format!(
        "{}SELECT * FROM usertable WHERE ycsb_key = :k;\n",
        zipfian_key()
    )
}

fn update_script(field: usize) -> String {
    format!(
        "{}UPDATE usertable SET field{field} = repeat(md5(random()::text), 3) WHERE ycsb_key = :k;\n",
        zipfian_key()
    )
}

/// The table, filled by the server itself: every field 96 characters
/// (YCSB's are 100).
fn load_script() -> String {
    let cols: Vec<String> = (0..FIELDS).map(|f| format!("field{f} text")).collect();
    let vals: Vec<String> = (0..FIELDS)
        .map(|f| format!("repeat(md5(g::text || '{f}'), 3)"))
        .collect();
    format!(
        "CREATE TABLE usertable (ycsb_key integer PRIMARY KEY, {});\n\
         INSERT INTO usertable SELECT g, {} FROM generate_series(0, :records - 1) AS g;\n\
         VACUUM ANALYZE usertable;\n",
        cols.join(", "),
        vals.join(", ")
    )
}

/// A scratch folder for scripts and logs, removed with this value.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Result<Self> {
        let dir =
            std::env::temp_dir().join(format!("scx_sisutil-ycsb-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Self(dir))
    }

    fn write(&self, name: &str, text: &str) -> Result<PathBuf> {
        let path = self.0.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pgbench(bin: &Path, host: &Path, records: u64) -> Command {
    let mut cmd = Command::new(bin.join("pgbench"));
    cmd.arg("-h")
        .arg(host)
        .args(["-U", "postgres", "-n", "-D"])
        .arg(format!("records={records}"))
        .stdin(Stdio::null());
    cmd
}

fn run_pgbench(mut cmd: Command, what: &str) -> Result<String> {
    let out = cmd
        .arg("postgres")
        .output()
        .with_context(|| format!("cannot run pgbench ({what})"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr
            .lines()
            .find(|l| l.contains("error"))
            .or_else(|| stderr.lines().last())
            .unwrap_or("");
        bail!("pgbench ({what}) failed ({}): {why}", out.status);
    }
    Ok(stdout)
}

/// Creates and fills the table.
pub fn load(server: &Server, records: u64) -> Result<()> {
    let scratch = Scratch::new("load")?;
    let script = scratch.write("load.sql", &load_script())?;
    let mut cmd = pgbench(server.bin(), server.socket_dir(), records);
    cmd.args(["-t", "1", "-c", "1", "-f"]).arg(script);
    run_pgbench(cmd, "loading the table").map(|_| ())
}

/// The timed phase against a loaded server.
fn measure(cfg: &Config, bin: &Path, host: &Path) -> Result<Report> {
    let scratch = Scratch::new("run")?;
    let (read_w, update_w) = cfg.workload.weights();
    let mut cmd = pgbench(bin, host, cfg.records);
    let clients = cfg.clients.to_string();
    cmd.args(["-M", "prepared", "-c", &clients, "-j", &clients, "-T"])
        .arg(cfg.seconds.to_string())
        .arg("-l")
        .arg(format!("--log-prefix={}", scratch.0.join("tx").display()));
    let read = scratch.write("read.sql", &read_script())?;
    cmd.arg("-f").arg(format!("{}@{read_w}", read.display()));
    if update_w > 0 {
        for f in 0..FIELDS {
            let path = scratch.write(&format!("update{f}.sql"), &update_script(f))?;
            cmd.arg("-f").arg(format!("{}@{update_w}", path.display()));
        }
    }
    let stdout = run_pgbench(cmd, "the timed phase")?;
    let ops = tps(&stdout)?;
    let mut lat = Vec::new();
    for entry in std::fs::read_dir(&scratch.0)? {
        let path = entry?.path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("tx."))
        {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            lat.extend(latencies(&text));
        }
    }
    if lat.is_empty() {
        bail!("pgbench logged no transaction");
    }
    lat.sort_unstable();
    Ok(Report {
        ops,
        p50_us: quantile(&lat, 0.50),
        p99_us: quantile(&lat, 0.99),
        p999_us: quantile(&lat, 0.999),
        transactions: lat.len() as u64,
    })
}

/// "tps = 7058.61 (without initial connection time)".
fn tps(stdout: &str) -> Result<f64> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("no \"tps = \" in pgbench's output"))
}

/// The latencies (us) in pgbench's per-transaction log, whose lines are
/// "client transaction latency script epoch usec".
fn latencies(log: &str) -> impl Iterator<Item = u64> + '_ {
    log.lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse().ok())
}

fn quantile(sorted: &[u64], q: f64) -> f64 {
    let idx = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx] as f64
}

pub fn run(cfg: &Config) -> Result<Report> {
    let bin = postgres::bin_dir(cfg.pg_bin.as_deref())?;
    if let Some(host) = &cfg.host {
        return measure(cfg, &bin, host);
    }
    let server = Server::start(&bin, cfg.clients).context("cannot start the database server")?;
    load(&server, cfg.records).context("cannot load the table")?;
    measure(cfg, &bin, server.socket_dir())
}

pub fn main(cfg: &Config) -> Result<()> {
    let r = run(cfg)?;
    if cfg.json {
        println!("{}", serde_json::to_string(&r)?);
        return Ok(());
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "YCSB workload {} on PostgreSQL, {} record(s), {} client(s), {} s",
        cfg.workload.name().to_uppercase(),
        cfg.records,
        cfg.clients,
        cfg.seconds
    );
    let _ = writeln!(
        out,
        "{:.1} ops/s over {} operations; latency (us): p50 {:.0}  p99 {:.0}  p99.9 {:.0}",
        r.ops, r.transactions, r.p50_us, r.p99_us, r.p999_us
    );
    print!("{out}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_outputs_are_read() {
        let out = "latency average = 0.283 ms\ninitial connection time = 38.258 ms\n\
                   tps = 7058.612888 (without initial connection time)\n";
        assert_eq!(tps(out).unwrap(), 7058.612888);
        assert!(tps("number of transactions actually processed: 0\n").is_err());
        let log = "0 1 2127 0 1796182788 30969\n0 2 3725 1 1796182788 34730\n\n";
        assert_eq!(latencies(log).collect::<Vec<_>>(), [2127, 3725]);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&[7], 0.999), 7.0);
    }

    #[test]
    fn workloads_mix_as_ycsbs() {
        // Reads against the ten update scripts together.
        let share = |w: Workload| {
            let (r, u) = w.weights();
            f64::from(r) / f64::from(r + FIELDS as u32 * u)
        };
        assert_eq!(share(Workload::A), 0.5);
        assert_eq!(share(Workload::B), 0.95);
        assert_eq!(share(Workload::C), 1.0);
        assert!(update_script(7).contains("SET field7 ="));
        assert!(load_script().contains("field9 text"));
    }
}
