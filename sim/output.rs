//! Output files — `--junit`, `--html`, `--pcap`, `gen --out`, an export's lab — are written
//! whole or not at all: into a temporary file beside the target, synced, then renamed over it
//! (rename is atomic within a file system). A failure midway (a full disk, an I/O error) leaves
//! the target as it was, with no half file, and the temporary file is removed. fabsim never
//! deletes a file it did not create.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Mode of a written file: what `std::fs::write` gives under the usual umask 022.
pub const FILE_MODE: u32 = 0o644;
/// Mode of a written script (an export's `up.sh`).
pub const SCRIPT_MODE: u32 = 0o755;

/// Write `path` from what `fill` writes, atomically, with `mode`.
pub fn write_with(path: &Path, mode: u32, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".fabsim-")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    {
        let mut w = io::BufWriter::new(tmp.as_file_mut());
        fill(&mut w)?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Write `bytes` to `path` atomically (mode 0644).
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    write_with(path, FILE_MODE, |w| w.write_all(bytes.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_writer_error_midway_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("report.html");
        std::fs::write(&target, "old report").expect("seed");
        let err = write_with(&target, FILE_MODE, |w| {
            w.write_all(&[b'x'; 100_000])?;
            Err(io::Error::other("injected: no space left on device"))
        })
        .expect_err("the injected error comes back");
        assert!(err.to_string().contains("injected"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "old report");
        assert_eq!(files_in(dir.path()), ["report.html"]);
    }

    #[test]
    fn a_new_file_appears_whole_with_its_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("up.sh");
        write_with(&target, SCRIPT_MODE, |w| w.write_all(b"#!/bin/sh\n")).expect("write");
        assert_eq!(std::fs::read(&target).expect("read"), b"#!/bin/sh\n");
        let mode = std::fs::metadata(&target).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, SCRIPT_MODE);
        assert_eq!(files_in(dir.path()), ["up.sh"]);
    }
}
