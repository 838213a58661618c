//! The stats socket's removal.
//!
//! Nothing of the scheduler may outlive it. Its socket (which also carries
//! the run-time switch) is removed when it exits normally, and by a watcher
//! process when it is killed, which no exit handler survives: the watcher's
//! stdin is a pipe from the scheduler, so it reads end-of-file however the
//! scheduler dies, and then removes the socket if it is still the one the
//! scheduler made.

use std::io::{BufRead, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

use anyhow::{Context, Result};

pub use sisutil_proto::socket::SOCKET;

/// The hidden subcommand that runs the watcher.
pub const WATCHER_CMD: &str = "__watch-socket";

/// Identity of a file: a later file at the same path is another one.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

fn file_id(path: &Path) -> Option<FileId> {
    std::fs::symlink_metadata(path).ok().map(|m| FileId {
        dev: m.dev(),
        ino: m.ino(),
    })
}

/// Removes `path` if it is still the file `id` names.
fn remove_if_same(path: &Path, id: &FileId) {
    if file_id(path).as_ref() == Some(id) {
        let _ = std::fs::remove_file(path);
    }
}

/// The scheduler's side: the watcher process and the socket it watches.
pub struct Watcher {
    child: Child,
    stdin: ChildStdin,
    watched: Option<FileId>,
}

impl Watcher {
    pub fn spawn() -> Result<Self> {
        let exe = std::env::current_exe().context("cannot find the scheduler's executable")?;
        let mut child = Command::new(exe)
            .arg(WATCHER_CMD)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start the socket watcher")?;
        let stdin = child
            .stdin
            .take()
            .context("the socket watcher has no stdin")?;
        Ok(Self {
            child,
            stdin,
            watched: None,
        })
    }

    /// Tells the watcher which socket to remove if the scheduler dies.
    pub fn watch(&mut self) -> Result<()> {
        let id = file_id(Path::new(SOCKET)).with_context(|| format!("{SOCKET} is missing"))?;
        writeln!(self.stdin, "{} {}", id.dev, id.ino).context("the socket watcher is gone")?;
        self.stdin.flush().context("the socket watcher is gone")?;
        self.watched = Some(id);
        Ok(())
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Some(id) = &self.watched {
            remove_if_same(Path::new(SOCKET), id);
        }
        // Closing stdin (dropping it) ends the watcher; reap it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The watcher's side: waits for end-of-file on stdin, then removes the
/// last socket it was told about if it is still there.
pub fn run_watcher() -> Result<()> {
    // A Ctrl-C reaches the whole process group; the watcher must outlive
    // the scheduler to do its job, and ends with it anyway.
    // SAFETY: setting signal dispositions to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    let mut last = None;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let mut it = line.split_whitespace().map(str::parse::<u64>);
        if let (Some(Ok(dev)), Some(Ok(ino))) = (it.next(), it.next()) {
            last = Some(FileId { dev, ino });
        }
    }
    if let Some(id) = last {
        remove_if_same(Path::new(SOCKET), &id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_the_same_file() {
        let dir = std::env::temp_dir().join(format!("sisu-cleanup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sock");
        std::fs::write(&path, b"a").unwrap();
        let id = file_id(&path).unwrap();

        // Replaced by a new file: left alone.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(dir.join("other"), b"b").unwrap();
        std::fs::write(&path, b"c").unwrap();
        if file_id(&path) != Some(id.clone()) {
            remove_if_same(&path, &id);
            assert!(path.exists());
        }

        let id = file_id(&path).unwrap();
        remove_if_same(&path, &id);
        assert!(!path.exists());
        remove_if_same(&path, &id);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
