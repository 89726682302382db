//! Namespaces to partitions: a fixed function of the namespace's name, the same on every node.

/// Partitions of a cluster unless configured otherwise: enough for a farm of a few nodes to
/// spread its namespaces, few enough that a node hosting all of them holds 16 files.
pub const DEFAULT_PARTITIONS: u32 = 16;

/// The partition of namespace `ns` among `count`: the first 8 bytes of the BLAKE3 hash of its
/// name, little-endian, modulo `count`. Fixed for the life of a cluster (changing `count`
/// moves namespaces, which needs a new cluster and an export/import).
pub fn partition_of(ns: &str, count: u32) -> u32 {
    let hash = blake3::hash(ns.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    (u64::from_le_bytes(first) % u64::from(count.max(1))) as u32
}

/// The JetStream stream of partition `p` (names under `prefix`).
pub fn stream_name(prefix: &str, p: u32) -> String {
    format!("{prefix}_P{p:03}")
}

/// The subject partition `p`'s entries are published on.
pub fn subject(prefix: &str, p: u32) -> String {
    format!("{}.p{p:03}", prefix.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_stable_and_spread() {
        // Fixed values: a change here moves every namespace of every cluster.
        assert_eq!(partition_of("default", 16), partition_of("default", 16));
        let fixed: Vec<u32> =
            ["default", "project:a", "agent:dev-1"].iter().map(|n| partition_of(n, 16)).collect();
        assert_eq!(fixed, FIXED);
        let mut counts = [0u32; 16];
        for i in 0..16_000 {
            counts[partition_of(&format!("project:{i}"), 16) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
        assert_eq!(partition_of("x", 1), 0);
        assert_eq!(partition_of("x", 0), 0);
        assert_eq!(stream_name("MNEMON", 7), "MNEMON_P007");
        assert_eq!(subject("MNEMON", 7), "mnemon.p007");
    }

    const FIXED: [u32; 3] = [7, 11, 5];
}
