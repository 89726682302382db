//! Print every table's redb statistics of a database file: `table_stats FILE`. Shows how full
//! the leaves are (stored bytes against leaf pages), which tells how many pages a commit writes
//! per record.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "diagnostic driver"
)]

use redb::{ReadableDatabase, ReadableTableMetadata, TableHandle};

fn main() {
    let path = std::env::args().nth(1).expect("usage: table_stats FILE");
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    println!(
        "{:<28} {:>8} {:>6} {:>6} {:>7} {:>10} {:>10} {:>10} {:>6}",
        "table", "rows", "depth", "leaves", "branches", "stored", "metadata", "fragment", "fill"
    );
    for h in txn.list_tables().unwrap() {
        let t = txn.open_untyped_table(h.clone()).unwrap();
        let s = t.stats().unwrap();
        let rows = t.len().unwrap();
        let fill = s.stored_bytes() as f64 / ((s.leaf_pages() * 4096).max(1)) as f64;
        println!(
            "{:<28} {:>8} {:>6} {:>6} {:>7} {:>10} {:>10} {:>10} {:>5.0}%",
            h.name(),
            rows,
            s.tree_height(),
            s.leaf_pages(),
            s.branch_pages(),
            s.stored_bytes(),
            s.metadata_bytes(),
            s.fragmented_bytes(),
            fill * 100.0
        );
    }
}
