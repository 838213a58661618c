//! A PostgreSQL server of our own for the YCSB load: a fresh cluster in a
//! folder under /tmp, reachable only on a Unix socket there, run by the
//! unprivileged user the server insists on, and gone with this value,
//! whatever ended the run.

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

/// Where Debian installs each PostgreSQL version's programs.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// How long a server may take to accept connections; a fresh cluster
/// under software emulation takes seconds.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// The folder with postgres, initdb and pgbench: @given, or the newest
/// Debian version.
pub fn bin_dir(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = given {
        if !dir.join("postgres").is_file() {
            bail!("{} has no postgres program", dir.display());
        }
        return Ok(dir.to_path_buf());
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(DEBIAN_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        anyhow!("PostgreSQL is not installed (no {DEBIAN_ROOT}/*/bin/postgres; scripts/setup.sh installs it)")
    })
}

/// The user to run the server as: ourselves, or "postgres" when we are
/// root, since the server refuses to run as root.
fn server_user() -> Result<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    if uid != 0 {
        return Ok((uid, gid));
    }
    // SAFETY: getpwnam returns null or a pointer to static storage that we
    // read before any other passwd call.
    let pw = unsafe { libc::getpwnam(c"postgres".as_ptr()) };
    if pw.is_null() {
        bail!("PostgreSQL will not run as root, and there is no user \"postgres\" to run it as");
    }
    // SAFETY: pw is non-null, checked above.
    Ok(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// Runs a PostgreSQL program as the server's user, its output to @log.
fn as_user(program: PathBuf, user: (u32, u32), log: &Path) -> Result<Command> {
    let out =
        std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut cmd = Command::new(program);
    cmd.uid(user.0)
        .gid(user.1)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    Ok(cmd)
}

fn last_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string()
}

pub struct Server {
    bin: PathBuf,
    dir: PathBuf,
    child: Child,
    exited: Option<ExitStatus>,
}

impl Server {
    /// A new cluster, started and accepting connections from up to
    /// @clients clients.
    pub fn start(bin: &Path, clients: u64) -> Result<Self> {
        let user = server_user()?;
        let dir = std::env::temp_dir().join(format!("scx_sisutil-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        std::os::unix::fs::chown(&dir, Some(user.0), Some(user.1))
            .with_context(|| format!("cannot give {} to the server's user", dir.display()))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        let cleanup = |e: anyhow::Error| {
            let _ = std::fs::remove_dir_all(&dir);
            e
        };

        let data = dir.join("data");
        let log = dir.join("initdb.log");
        let status = as_user(bin.join("initdb"), user, &log)
            .map_err(cleanup)?
            .arg("-D")
            .arg(&data)
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "--locale=C",
                "-E",
                "UTF8",
                "--no-sync",
            ])
            .status()
            .context("cannot run initdb")
            .map_err(cleanup)?;
        if !status.success() {
            let why = last_line(&log);
            return Err(cleanup(anyhow!("initdb failed ({status}): {why}")));
        }

        let log = dir.join("server.log");
        let mut cmd = as_user(bin.join("postgres"), user, &log).map_err(cleanup)?;
        cmd.arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&dir)
            // A benchmark of scheduling, not of the disk: no listening port,
            // no waits for durable writes.
            .args(["-c", "listen_addresses=", "-c", "fsync=off"])
            .args(["-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
            .args(["-c", "shared_buffers=64MB"])
            .arg("-c")
            .arg(format!("max_connections={}", clients + 5))
            .process_group(0);
        // SAFETY: prctl is async-signal-safe. The server dies with us even
        // if we are killed: nothing is left running.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .context("cannot start postgres")
            .map_err(cleanup)?;
        let mut server = Server {
            bin: bin.to_path_buf(),
            dir,
            child,
            exited: None,
        };
        server.await_ready()?;
        Ok(server)
    }

    /// Waits for postmaster.pid to say "ready", as pg_ctl does.
    fn await_ready(&mut self) -> Result<()> {
        let pid_file = self.dir.join("data/postmaster.pid");
        let start = Instant::now();
        loop {
            if let Some(why) = self.failure() {
                bail!("{why}: {}", last_line(&self.dir.join("server.log")));
            }
            let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
            if text.lines().any(|l| l.trim() == "ready") {
                return Ok(());
            }
            if start.elapsed() > READY_TIMEOUT {
                bail!(
                    "postgres did not accept connections within {} s",
                    READY_TIMEOUT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The folder of the server's socket, for `pgbench -h`.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// Why the server is no longer there, if it is not.
    pub fn failure(&mut self) -> Option<String> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
            .map(|st| format!("the database server exited ({st})"))
    }

    /// Stops the server and removes its folder: a fast shutdown, then
    /// SIGKILL to its whole process group after 30 s.
    fn stop(&mut self) {
        let pgid = self.child.id() as libc::pid_t;
        if self.failure().is_none() {
            // SAFETY: a signal to the process group we made for the server.
            unsafe { libc::killpg(pgid, libc::SIGINT) };
            let start = Instant::now();
            while self.failure().is_none() && start.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // Backends outlive a killed postmaster for a moment.
        // SAFETY: as above; ESRCH when the group is already gone.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
