//! The file readers (CSV, XLSX, Parquet) given what no client should send: random bytes, the
//! templates cut short or with bytes flipped, headers of millions of columns, fields of many
//! megabytes, open quotes, NUL bytes. Each file ends cleanly, refused whole or read record by
//! record to its end, and the process's peak memory stays within a bound whatever the file holds.
//!
//! CI runs `CASES` files with a fixed seed (one that reaches a footer the Parquet library panics
//! on). The long mode:
//! `REWARDS_FUZZ_FILES=2000 REWARDS_FUZZ_SEED=$RANDOM cargo test -p ingest --test readers_fuzz`.
//! (The test runs again in a process of its own, so that the peak memory measured is this
//! test's and not that of the tests beside it.)

use generators::earns::Sequence as Dice;
use ingest::batch::mapping::Mapping;
use ingest::batch::records::Records;

/// Files in CI.
const CASES: u64 = 150;
/// The most the process's peak memory may grow while the files are read.
const MEMORY_BOUND: u64 = 512 << 20;
/// Set in the process the test runs in.
const ALONE: &str = "REWARDS_FUZZ_ALONE";

/// The process's peak resident memory so far, in bytes (`VmHWM`).
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// A hostile file: its name (which says its format) and bytes.
fn hostile_file(dice: &mut Dice) -> (&'static str, Vec<u8>) {
    const CSV: &[u8] = include_bytes!("../../../templates/earn.csv");
    const XLSX: &[u8] = include_bytes!("../../../templates/earn.xlsx");
    const PARQUET: &[u8] = include_bytes!("../../../templates/earn.parquet");
    let random =
        |dice: &mut Dice, n: usize| -> Vec<u8> { (0..n).map(|_| dice.next_u64() as u8).collect() };
    let cut = |dice: &mut Dice, bytes: &[u8]| bytes[..dice.below(bytes.len())].to_vec();
    let flipped = |dice: &mut Dice, bytes: &[u8]| {
        let mut bytes = bytes.to_vec();
        for _ in 0..1 + dice.below(64) {
            let at = dice.below(bytes.len());
            bytes[at] = dice.next_u64() as u8;
        }
        bytes
    };
    match dice.below(13) {
        0 => ("random.csv", random(dice, 1 << 20)),
        1 => ("random.xlsx", random(dice, 64 << 10)),
        2 => ("random.parquet", random(dice, 64 << 10)),
        3 => ("cut.xlsx", cut(dice, XLSX)),
        4 => ("cut.parquet", cut(dice, PARQUET)),
        5 => ("flipped.xlsx", flipped(dice, XLSX)),
        6 => ("flipped.parquet", flipped(dice, PARQUET)),
        7 => ("flipped.csv", flipped(dice, CSV)),
        8 => {
            let mut wide = b"x,".repeat(1 + dice.below(2_000_000));
            wide.extend_from_slice(b"x\n1\n");
            ("wide.csv", wide)
        }
        9 => {
            let mut long = CSV.to_vec();
            long.extend(std::iter::repeat_n(b'y', 1 + dice.below(30 << 20)));
            long.extend_from_slice(b"\ne-9,w-1,1,2026-11-20\n");
            ("long.csv", long)
        }
        10 => {
            let mut open = CSV.to_vec();
            open.extend_from_slice(b"e-8,w-1,\"1,2026-11-20\n");
            open.extend(b"e,w,1,2026-11-20\n".repeat(dice.below(5_000)));
            ("open.csv", open)
        }
        11 => {
            // Quotes, delimiters, line breaks and NULs in any order.
            let alphabet = b"\",\n\r\0a;\t";
            let bytes = (0..1 + dice.below(1 << 20))
                .map(|_| alphabet[dice.below(alphabet.len())])
                .collect();
            ("shuffled.csv", bytes)
        }
        _ => ("empty.parquet", Vec::new()),
    }
}

#[test]
fn hostile_files_end_cleanly_within_a_memory_bound() {
    if std::env::var_os(ALONE).is_none() {
        let name = "readers_fuzz::hostile_files_end_cleanly_within_a_memory_bound";
        let ran = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--nocapture"])
            .env(ALONE, "1")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&ran.stdout);
        assert!(ran.status.success() && out.contains("1 passed"), "{out}");
        return;
    }
    let cases: u64 = std::env::var("REWARDS_FUZZ_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES);
    let seed: u64 = std::env::var("REWARDS_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let mut dice = Dice::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let mapping = Mapping::canonical();
    let before = peak_memory();
    for case in 0..cases {
        let (name, bytes) = hostile_file(&mut dice);
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let size = bytes.len();
        drop(bytes);
        let what = format!("case {case} (seed {seed}): {name}, {size} bytes");
        match Records::open(&path, name, &mapping) {
            Err(reason) => assert!(
                !reason.to_string().is_empty(),
                "{what}: refused without a reason"
            ),
            Ok((mut records, _)) => {
                let mut read = 0u64;
                loop {
                    match records.next_record() {
                        Ok(Some(_)) => read += 1,
                        Ok(None) => break,
                        Err(reason) => {
                            assert!(
                                !reason.to_string().is_empty(),
                                "{what}: stopped without a reason"
                            );
                            break;
                        }
                    }
                    assert!(read <= 10_000_000, "{what}: more records than bytes");
                }
            }
        }
        let grown = peak_memory().saturating_sub(before);
        assert!(
            grown <= MEMORY_BOUND,
            "{what}: peak memory grew by {} MiB",
            grown >> 20
        );
    }
}
