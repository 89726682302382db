//! Index files beside the database, published by a manifest row in redb.
//!
//! Protocol (see docs/index.md):
//! 1. the graph is written under a new generation's base name (`<segment>.g<N>`): hnsw_rs'
//!    `.hnsw.graph` and `.hnsw.data`, and our `.points` (slot to record and revision);
//! 2. every file is fsynced, then the directory;
//! 3. the manifest row (generation, files with lengths and blake3 checksums, dimension,
//!    parameters, the last commit covered) is committed durably in `mnemon.aux`;
//! 4. only then are older generations' files deleted.
//!
//! A crash before 3 leaves the old manifest and its files in place (the new files are
//! garbage, removed later); after 3 the new files are complete. On load every file's length
//! and checksum is verified before hnsw_rs reads it; any mismatch means rebuild.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use mnemon_storage::{Namespace, RecordId};
use serde::{Deserialize, Serialize};

use crate::error::IndexError;
use crate::graph::HnswParams;
use crate::segment::Slot;

/// The manifest layout version.
const MANIFEST_VERSION: u32 = 1;
/// The points file's magic and version.
const POINTS_MAGIC: &[u8; 8] = b"MNPOINT1";

/// The aux key of a segment's manifest: unambiguous for any space and namespace names.
pub(crate) fn manifest_key(space: &str, ns: &Namespace) -> String {
    format!("index/{}:{space}/{}", space.len(), ns.as_str())
}

/// The file-name stem of a segment: a hash of its space and namespace (names may hold any
/// character; file names may not).
pub(crate) fn segment_stem(space: &str, ns: &Namespace) -> String {
    let mut h = blake3::Hasher::new();
    h.update(space.as_bytes());
    h.update(&[0]);
    h.update(ns.as_str().as_bytes());
    let hex = h.finalize().to_hex();
    format!("seg-{}", &hex.as_str()[..16])
}

/// One published file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// File name inside the index directory.
    pub name: String,
    /// Length in bytes.
    pub len: u64,
    /// blake3 of the contents, hex.
    pub blake3: String,
}

/// The manifest row of one segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Layout version.
    pub version: u32,
    /// Generation: one more at every publish.
    pub generation: u64,
    /// The base name the graph was saved under.
    pub basename: String,
    /// The graph implementation that wrote it (`mnemon` or `hnsw_rs`).
    pub engine: String,
    /// The vector space.
    pub space: String,
    /// The namespace.
    pub namespace: String,
    /// The dimension.
    pub dimension: u32,
    /// M.
    pub m: usize,
    /// ef_construction.
    pub ef_construction: usize,
    /// Slots in the points file.
    pub slots: u64,
    /// Slots in the graph.
    pub graph_points: u64,
    /// The last commit the files reflect (later ones are caught up from redb).
    pub covered_seq: u64,
    /// The files.
    pub files: Vec<ManifestFile>,
}

impl Manifest {
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Manifest, String> {
        let m: Manifest = serde_json::from_slice(bytes).map_err(|e| format!("malformed manifest: {e}"))?;
        if m.version != MANIFEST_VERSION {
            return Err(format!("manifest version {} (this build reads {MANIFEST_VERSION})", m.version));
        }
        Ok(m)
    }

    pub(crate) fn params(&self, ef_search: usize) -> HnswParams {
        HnswParams { m: self.m, ef_construction: self.ef_construction, ef_search }
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io { path: path.to_path_buf(), source }
}

/// Write the points file: which record revision each slot holds, and whether it is in the
/// graph.
pub(crate) fn write_points(
    path: &Path,
    dim: usize,
    slots: &[Slot],
    in_graph: &[bool],
) -> Result<(), IndexError> {
    let f = File::create(path).map_err(io_err(path))?;
    let mut w = BufWriter::new(f);
    let mut put = |b: &[u8]| w.write_all(b).map_err(io_err(path));
    put(POINTS_MAGIC)?;
    put(&(dim as u64).to_le_bytes())?;
    put(&(slots.len() as u64).to_le_bytes())?;
    for (s, g) in slots.iter().zip(in_graph) {
        put(&s.id.as_u128().to_le_bytes())?;
        put(&s.from_rev.to_le_bytes())?;
        put(&[u8::from(*g)])?;
    }
    let f =
        w.into_inner().map_err(|e| IndexError::Io { path: path.to_path_buf(), source: e.into_error() })?;
    f.sync_all().map_err(io_err(path))
}

/// Read a points file written by [`write_points`].
pub(crate) fn read_points(path: &Path, dim: usize) -> Result<(Vec<Slot>, Vec<bool>), String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    parse_points(&bytes, dim)
}

/// The slots of a points file's bytes (see [`write_points`]).
pub(crate) fn parse_points(bytes: &[u8], dim: usize) -> Result<(Vec<Slot>, Vec<bool>), String> {
    let take = |at: usize, n: usize| bytes.get(at..at + n).ok_or_else(|| "truncated points file".to_string());
    if take(0, 8)? != POINTS_MAGIC {
        return Err("not a points file".into());
    }
    let u64_at = |at: usize| -> Result<u64, String> {
        let b: [u8; 8] = take(at, 8)?.try_into().map_err(|_| "truncated points file".to_string())?;
        Ok(u64::from_le_bytes(b))
    };
    if u64_at(8)? != dim as u64 {
        return Err("points file of another dimension".into());
    }
    let n = usize::try_from(u64_at(16)?).map_err(|_| "bad count".to_string())?;
    const ROW: usize = 16 + 4 + 1;
    if n.checked_mul(ROW).and_then(|b| b.checked_add(24)) != Some(bytes.len()) {
        return Err("points file length does not match its count".into());
    }
    let mut slots = Vec::with_capacity(n);
    let mut in_graph = Vec::with_capacity(n);
    for i in 0..n {
        let at = 24 + i * ROW;
        let id: [u8; 16] = take(at, 16)?.try_into().map_err(|_| "truncated".to_string())?;
        let rev: [u8; 4] = take(at + 16, 4)?.try_into().map_err(|_| "truncated".to_string())?;
        slots.push(Slot {
            id: RecordId::from_u128(u128::from_le_bytes(id)),
            from_rev: u32::from_le_bytes(rev),
        });
        in_graph.push(take(at + 20, 1)?[0] == 1);
    }
    Ok((slots, in_graph))
}

/// Length and blake3 of a file.
pub(crate) fn checksum(path: &Path) -> Result<(u64, String), IndexError> {
    let mut f = File::open(path).map_err(io_err(path))?;
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        len += n as u64;
        h.update(&buf[..n]);
    }
    Ok((len, h.finalize().to_hex().to_string()))
}

/// fsync a file that was written by someone else (hnsw_rs' dump).
pub(crate) fn sync_file(path: &Path) -> Result<(), IndexError> {
    File::open(path).and_then(|f| f.sync_all()).map_err(io_err(path))
}

/// fsync a directory so the names of new files are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    File::open(dir).and_then(|f| f.sync_all()).map_err(io_err(dir))
}

/// Check every file of a manifest against its length and checksum.
pub(crate) fn verify_files(dir: &Path, m: &Manifest) -> Result<(), String> {
    if m.files.is_empty() {
        return Err("manifest lists no files".into());
    }
    for f in &m.files {
        if f.name.contains('/') || f.name.contains('\\') || f.name.starts_with('.') {
            return Err(format!("manifest names a file outside the index directory: {:?}", f.name));
        }
        let path = dir.join(&f.name);
        let (len, sum) = checksum(&path).map_err(|e| e.to_string())?;
        if len != f.len || sum != f.blake3 {
            return Err(format!("{} does not match its checksum", path.display()));
        }
    }
    Ok(())
}

/// Remove files of this segment that the manifest does not name (older generations, or
/// the leftovers of a publish that crashed before its manifest was committed).
pub(crate) fn remove_unreferenced(dir: &Path, stem: &str, keep: &[String]) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return removed };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with(&format!("{stem}."))
            && !keep.contains(&name)
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed.push(e.path());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_round_trip_and_reject_damage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.points");
        let slots =
            vec![Slot { id: RecordId::new(), from_rev: 3 }, Slot { id: RecordId::new(), from_rev: 0 }];
        write_points(&p, 8, &slots, &[true, false]).unwrap();
        let (s, g) = read_points(&p, 8).unwrap();
        assert_eq!((s, g), (slots, vec![true, false]));
        assert!(read_points(&p, 9).is_err());
        let mut bytes = std::fs::read(&p).unwrap();
        bytes.pop();
        std::fs::write(&p, &bytes).unwrap();
        assert!(read_points(&p, 8).is_err());
    }

    #[test]
    fn keys_are_unambiguous() {
        let a = manifest_key("m/x", &Namespace::new("y").unwrap());
        let b = manifest_key("m", &Namespace::new("x/y").unwrap());
        assert_ne!(a, b);
        assert_ne!(
            segment_stem("m/x", &Namespace::new("y").unwrap()),
            segment_stem("m", &Namespace::new("x/y").unwrap())
        );
    }
}
