//! A log file rotated by size, a line at a time: a line that would take the file past its
//! bound starts a new file, so every file ends at a line's end and never passes the bound, and
//! at most `keep` rotated files stay. (The `file-rotate` crate cuts a line across two files
//! or lets a file pass its limit by a write, and panics when the directory cannot be made;
//! records that `rebound eval --replay` reads back need whole lines.)

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// An append-only file of lines, rotated before it would pass `max_bytes`. Rotated files are
/// `FILE.N`, numbered in the order they were rotated (the highest the newest), so a rotation
/// renames one file and removes at most one, however many are kept.
#[derive(Debug)]
pub(super) struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    out: BufWriter<File>,
    size: u64,
    /// The number the next rotated file takes.
    next: u64,
}

impl RotatingFile {
    /// Opens `path` for appending (its directory must exist), continuing its current size and
    /// the numbering of the rotated files beside it; of those, the `keep` newest stay.
    pub(super) fn open(path: &Path, max_bytes: u64, keep: u32) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let size = file.metadata()?.len();
        let mut rotated = rotated_numbers(path)?;
        rotated.sort_unstable();
        let next = rotated.last().map_or(1, |newest| newest + 1);
        let stale = rotated.len().saturating_sub(keep as usize);
        for &n in &rotated[..stale] {
            remove_if_present(&numbered(path, n))?;
        }
        Ok(RotatingFile {
            path: path.to_owned(),
            max_bytes,
            keep,
            out: BufWriter::new(file),
            size,
            next,
        })
    }

    /// Whether a line of `len` bytes (its newline included) can ever be written.
    pub(super) fn fits(&self, len: usize) -> bool {
        len as u64 <= self.max_bytes
    }

    /// Appends `line` (which ends with its newline), rotating first if it would not fit.
    pub(super) fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        if self.size + line.len() as u64 > self.max_bytes && self.size > 0 {
            self.rotate()?;
        }
        self.out.write_all(line)?;
        self.size += line.len() as u64;
        Ok(())
    }

    /// Writes what is buffered to the file.
    pub(super) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// `FILE` → `FILE.{next}`, `FILE.{next - keep}` removed, then a new empty `FILE`.
    fn rotate(&mut self) -> io::Result<()> {
        self.out.flush()?;
        if self.keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            std::fs::rename(&self.path, numbered(&self.path, self.next))?;
            if let Some(oldest) = self.next.checked_sub(u64::from(self.keep)) {
                if oldest > 0 {
                    remove_if_present(&numbered(&self.path, oldest))?;
                }
            }
            self.next += 1;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.out = BufWriter::new(file);
        self.size = 0;
        Ok(())
    }
}

/// `path.n`.
fn numbered(path: &Path, n: u64) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// The numbers of the rotated files beside `path`.
fn rotated_numbers(path: &Path) -> io::Result<Vec<u64>> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(Vec::new());
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{}.", name.to_string_lossy());
    let mut numbers = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?.file_name();
        let number = (entry.to_str())
            .and_then(|entry| entry.strip_prefix(&prefix))
            .filter(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u64>().ok());
        numbers.extend(number);
    }
    Ok(numbers)
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::unix::fs::MetadataExt;

    /// Each rotated file's inode, by name.
    fn rotated(dir: &Path) -> BTreeMap<String, u64> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name() != "log")
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, e.metadata().unwrap().ino())
            })
            .collect()
    }

    /// docs/observability.md "Decision log": a rotation renames the current file to the next
    /// number and removes the oldest past `keep`; no other rotated file is touched (each name
    /// keeps its file), so a rotation costs the same whatever `keep` is.
    #[test]
    fn a_rotation_renames_one_file_whatever_keep_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let line = [b'x'; 99].iter().chain(b"\n").copied().collect::<Vec<u8>>();
        let mut file = RotatingFile::open(&path, 4096, 100).unwrap();
        let fill = |file: &mut RotatingFile| {
            for _ in 0..40 {
                file.write_line(&line).unwrap(); // 40 lines fill a file; the next rotates
            }
        };
        fill(&mut file);
        let mut before = rotated(dir.path());
        for rotation in 1..=150u64 {
            fill(&mut file);
            let after = rotated(dir.path());
            let added: Vec<&String> = after.keys().filter(|n| !before.contains_key(*n)).collect();
            assert_eq!(added, [&format!("log.{rotation}")]);
            for (name, inode) in &after {
                if let Some(was) = before.get(name) {
                    assert_eq!(inode, was, "{name} was rewritten by rotation {rotation}");
                }
            }
            let removed = before.keys().filter(|n| !after.contains_key(*n)).count();
            assert_eq!(removed, usize::from(rotation > 100));
            before = after;
        }
        assert_eq!(before.len(), 100);
    }

    /// Opening continues the numbering of the rotated files already there, and removes those
    /// past `keep`, oldest first.
    #[test]
    fn opening_continues_the_numbering_and_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        for n in [3, 7, 8, 9] {
            std::fs::write(numbered(&path, n), "").unwrap();
        }
        std::fs::write(dir.path().join("log.old"), "").unwrap();
        let mut file = RotatingFile::open(&path, 4096, 2).unwrap();
        let names = |dir: &Path| {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(dir.path()), ["log", "log.8", "log.9", "log.old"]);
        file.write_line(b"a\n").unwrap();
        file.rotate().unwrap();
        assert_eq!(names(dir.path()), ["log", "log.10", "log.9", "log.old"]);
    }
}
