//! A log file rotated by size, a line at a time: a line that would take the file past its
//! bound starts a new file, so every file ends at a line's end and never passes the bound, and
//! at most `keep` rotated files stay. (The `file-rotate` crate cuts a line across two files
//! or lets a file pass its limit by a write, and panics when the directory cannot be made;
//! records that `rebound eval --replay` reads back need whole lines.)

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// An append-only file of lines, rotated before it would pass `max_bytes`.
#[derive(Debug)]
pub(super) struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    out: BufWriter<File>,
    size: u64,
}

impl RotatingFile {
    /// Opens `path` for appending (its directory must exist), continuing its current size.
    pub(super) fn open(path: &Path, max_bytes: u64, keep: u32) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path: path.to_owned(),
            max_bytes,
            keep,
            out: BufWriter::new(file),
            size,
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

    /// `FILE.{keep-1}` → `FILE.{keep}`, …, `FILE` → `FILE.1`, then a new empty `FILE`.
    fn rotate(&mut self) -> io::Result<()> {
        self.out.flush()?;
        let numbered = |n: u32| {
            let mut name = self.path.clone().into_os_string();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        };
        if self.keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            for n in (1..self.keep).rev() {
                match std::fs::rename(numbered(n), numbered(n + 1)) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
            std::fs::rename(&self.path, numbered(1))?;
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
