//! Parquet files written with `ParquetSink` and read back with `ParquetRows`: every type as the
//! text a CSV cell would hold, struct fields as dotted columns, row groups in order, and files
//! that are not Parquet refused whole.

use columnar::{ParquetRows, ParquetSink, Values};

fn text(values: &[&str]) -> Values {
    Values::Text(values.iter().map(|v| Some(v.to_string())).collect())
}

fn all_rows(rows: &mut ParquetRows) -> Vec<(u64, Vec<String>)> {
    let mut out = Vec::new();
    while let Some((row, fields, bad)) = rows.next_row().unwrap() {
        assert!(!bad);
        out.push((row, fields));
    }
    out
}

#[test]
fn typed_columns_read_as_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("earn.parquet");
    let mut sink = ParquetSink::create(&path).unwrap();
    let batch = |ids: &[&str], amounts: Vec<Option<String>>, micros: Vec<Option<i64>>| {
        vec![
            ("id".to_string(), text(ids)),
            ("walletId".to_string(), text(&vec!["card-1"; ids.len()])),
            (
                "amount".to_string(),
                Values::Decimal {
                    values: amounts,
                    precision: 18,
                    scale: 2,
                },
            ),
            ("date".to_string(), Values::Timestamp { micros, utc: true }),
            (
                "meta".to_string(),
                Values::Struct(vec![
                    ("store".to_string(), text(&vec!["A1"; ids.len()])),
                    ("visits".to_string(), Values::Int(vec![Some(3); ids.len()])),
                ]),
            ),
        ]
    };
    let at = 1_763_633_700_000_000; // 2025-11-20T10:15:00Z
    sink.write(batch(
        &["t-1", "t-2"],
        vec![Some("12.50".into()), None],
        vec![Some(at), Some(at + 1_500)],
    ))
    .unwrap();
    sink.write(batch(&["t-3"], vec![Some("-0.05".into())], vec![None]))
        .unwrap();
    sink.finish().unwrap();

    let mut rows = ParquetRows::open(&path).unwrap();
    assert_eq!(
        rows.header(),
        [
            "id",
            "walletId",
            "amount",
            "date",
            "meta.store",
            "meta.visits"
        ]
    );
    assert_eq!(rows.len(), 3);
    let read = all_rows(&mut rows);
    let fields = |f: &[&str]| {
        f.iter()
            .map(std::string::ToString::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        read,
        vec![
            (
                1,
                fields(&["t-1", "card-1", "12.50", "2025-11-20T10:15:00Z", "A1", "3"])
            ),
            (
                2,
                fields(&[
                    "t-2",
                    "card-1",
                    "",
                    "2025-11-20T10:15:00.001500Z",
                    "A1",
                    "3"
                ])
            ),
            (3, fields(&["t-3", "card-1", "-0.05", "", "A1", "3"])),
        ]
    );
}

#[test]
fn numbers_dates_and_local_times_read_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("types.parquet");
    let mut sink = ParquetSink::create(&path).unwrap();
    sink.write(vec![
        (
            "float".to_string(),
            Values::Float(vec![Some(12.5), Some(0.1), Some(3.0)]),
        ),
        (
            "int".to_string(),
            Values::Int(vec![Some(-7), Some(1_000_000_000_000), None]),
        ),
        (
            "day".to_string(),
            Values::Date(vec![Some(20_412), Some(0), None]),
        ),
        (
            "local".to_string(),
            Values::Timestamp {
                micros: vec![Some(1_763_633_700_000_000), None, Some(0)],
                utc: false,
            },
        ),
        (
            "flag".to_string(),
            Values::Bool(vec![Some(true), Some(false), None]),
        ),
    ])
    .unwrap();
    sink.finish().unwrap();
    let mut rows = ParquetRows::open(&path).unwrap();
    let read: Vec<Vec<String>> = all_rows(&mut rows).into_iter().map(|(_, f)| f).collect();
    assert_eq!(
        read,
        vec![
            vec!["12.5", "-7", "2025-11-20", "2025-11-20T10:15:00", "true"],
            vec!["0.1", "1000000000000", "1970-01-01", "", "false"],
            vec!["3", "", "", "1970-01-01T00:00:00", ""],
        ]
    );
}

#[test]
fn what_is_not_parquet_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("earn.parquet");
    std::fs::write(&csv, "id,walletId,amount,date\nt-1,card-1,5,2026-11-20\n").unwrap();
    let err = ParquetRows::open(&csv).err().unwrap();
    assert!(err.contains("not Parquet"), "{err}");

    let good = dir.path().join("good.parquet");
    let mut sink = ParquetSink::create(&good).unwrap();
    sink.write(vec![("id".to_string(), text(&["t-1", "t-2"]))])
        .unwrap();
    sink.finish().unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let truncated = dir.path().join("truncated.parquet");
    std::fs::write(&truncated, &bytes[..bytes.len() - 10]).unwrap();
    let err = ParquetRows::open(&truncated).err().unwrap();
    assert!(err.contains("not Parquet, or is truncated"), "{err}");
}

/// A column of a type an earn file cannot use (a list) refuses the file, naming the column;
/// bytes that are not UTF-8 mark their row, as a CSV cell's would.
#[test]
fn lists_are_refused_by_name_and_bad_bytes_marked() {
    use polars::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let listed = dir.path().join("listed.parquet");
    let tags = Series::new(
        "tags".into(),
        [
            Series::new("".into(), ["a", "b"]),
            Series::new("".into(), ["c"]),
        ],
    );
    let id = Series::new("id".into(), ["t-1", "t-2"]);
    let mut frame = DataFrame::new(2, vec![id.into(), tags.into()]).unwrap();
    ParquetWriter::new(std::fs::File::create(&listed).unwrap())
        .finish(&mut frame)
        .unwrap();
    let err = ParquetRows::open(&listed).err().unwrap();
    assert!(err.contains("column `tags` holds list"), "{err}");
    assert!(!err.contains("`id`"), "{err}");

    let bytes = dir.path().join("bytes.parquet");
    let mut sink = ParquetSink::create(&bytes).unwrap();
    sink.write(vec![(
        "note".to_string(),
        Values::Bytes(vec![
            Some(b"caf\xc3\xa9".to_vec()),
            Some(b"caf\xe9".to_vec()),
        ]),
    )])
    .unwrap();
    sink.finish().unwrap();
    let mut rows = ParquetRows::open(&bytes).unwrap();
    let marks: Vec<(String, bool)> = std::iter::from_fn(|| rows.next_row().unwrap())
        .map(|(_, fields, bad)| (fields[0].clone(), bad))
        .collect();
    assert_eq!(
        marks,
        [
            ("café".to_string(), false),
            ("caf\u{fffd}".to_string(), true)
        ]
    );
}

/// A row group larger than what is read at once (a warehouse's million-row groups) comes out
/// whole and in order, numbered across its parts and the next group.
#[test]
fn a_large_row_group_is_read_in_parts_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.parquet");
    let mut sink = ParquetSink::create(&path).unwrap();
    let ids =
        |from: usize, to: usize| -> Vec<String> { (from..to).map(|i| format!("t-{i}")).collect() };
    let big = ids(0, 150_000);
    let big: Vec<&str> = big.iter().map(String::as_str).collect();
    let amounts: Vec<Option<i64>> = (0..150_000).map(|i| Some(i as i64)).collect();
    sink.write(vec![
        ("id".to_string(), text(&big)),
        ("amount".to_string(), Values::Int(amounts)),
    ])
    .unwrap();
    sink.write(vec![
        ("id".to_string(), text(&["t-150000"])),
        ("amount".to_string(), Values::Int(vec![None])),
    ])
    .unwrap();
    sink.finish().unwrap();

    let mut rows = ParquetRows::open(&path).unwrap();
    assert_eq!(rows.len(), 150_001);
    let all = all_rows(&mut rows);
    assert_eq!(all.len(), 150_001);
    for (i, (row, fields)) in all.iter().enumerate() {
        assert_eq!(*row, i as u64 + 1);
        assert_eq!(fields[0], format!("t-{i}"));
    }
    assert_eq!(all[65_536].1, ["t-65536", "65536"]);
    assert_eq!(all[150_000].1, ["t-150000", ""]);
}

/// A file written with page checksums (by pyarrow, `write_page_checksum=True`) is read when
/// they match, and refused whole when a byte in the middle of a page differs, though its footer
/// is intact.
#[test]
fn page_checksums_are_verified() {
    let good =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/checksummed.parquet");
    let mut rows = ParquetRows::open(&good).unwrap();
    let all = all_rows(&mut rows);
    assert_eq!(all.len(), 1_000);
    assert_eq!(all[500].1[0], "e-00500");

    let mut bytes = std::fs::read(&good).unwrap();
    let at = bytes.windows(7).position(|w| w == b"e-00500").unwrap();
    bytes[at + 6] = b'9';
    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join("damaged.parquet");
    std::fs::write(&damaged, &bytes).unwrap();
    let refused = ParquetRows::open(&damaged).err().unwrap();
    assert!(refused.contains("checksum does not match"), "{refused}");
}
