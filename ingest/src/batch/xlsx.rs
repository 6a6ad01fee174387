//! XLSX earn files: read with calamine after a safety check of the archive, so that a zip bomb or
//! a sheet declaring millions of cells is refused with bounded memory; and a small writer for the
//! template and generated test files.
//!
//! Spreadsheets are for small files: at most 10,000 records; larger files belong in CSV.

use std::io::Read;
use std::path::Path;

use calamine::{DataRef, Reader, Xlsx};

use crate::error::{Context, IngestError};

/// Most records (rows after the header) a spreadsheet may hold.
pub const MAX_RECORDS: usize = 10_000;
/// Most columns a row may use.
pub const MAX_COLUMNS: usize = 512;
/// Most entries in the archive (an ordinary workbook has a dozen or two).
const MAX_ENTRIES: usize = 1_000;
/// Most bytes one entry, and all of them, may hold once decompressed.
const MAX_ENTRY_BYTES: u64 = 64 << 20;
const MAX_TOTAL_BYTES: u64 = 160 << 20;
/// Highest compression ratio of an entry above 1 MiB (XML of a real sheet stays well below).
const MAX_RATIO: u64 = 200;

/// A sheet's non-blank rows: (row number in the sheet, counting from 1; its cells as text).
pub type Rows = Vec<(u64, Vec<String>)>;

/// The first sheet's rows, or why the file is refused. `header_rows` rows may precede the
/// records (they do not count toward `MAX_RECORDS`).
pub fn read(path: &Path, header_rows: u64) -> Result<Rows, IngestError> {
    check_archive(path)?;
    let mut workbook: Xlsx<_> = calamine::open_workbook(path).map_err(|e| {
        IngestError::refused(format!("the file is not a readable XLSX workbook: {e}"))
    })?;
    let Some(sheet) = workbook.sheet_names().first().cloned() else {
        return Err(IngestError::refused("the workbook has no sheet"));
    };
    let mut cells = workbook
        .worksheet_cells_reader(&sheet)
        .map_err(|e| IngestError::refused(format!("the sheet `{sheet}` cannot be read: {e}")))?;
    let max_rows = MAX_RECORDS as u64 + header_rows;
    let mut rows: Rows = Vec::new();
    // The row being read; it joins `rows` when a cell of another row comes.
    let mut current: Option<(u64, Vec<String>)> = None;
    let too_many = || {
        format!(
            "the sheet holds more than {MAX_RECORDS} records: spreadsheets are for small files, \
             send this one as CSV (see templates/earn.csv)"
        )
    };
    loop {
        let cell = match cells.next_cell() {
            Ok(Some(cell)) => cell,
            Ok(None) => break,
            Err(e) => {
                return Err(IngestError::refused(format!(
                    "the sheet `{sheet}` cannot be read: {e}"
                )));
            }
        };
        let (row, column) = cell.get_position();
        let (row, column) = (u64::from(row) + 1, column as usize);
        if column >= MAX_COLUMNS {
            return Err(IngestError::refused(format!(
                "the sheet uses column {} on row {row}; at most {MAX_COLUMNS} columns are read",
                column + 1
            )));
        }
        let text = text(cell.get_value());
        if text.is_empty() {
            continue;
        }
        if current.as_ref().is_some_and(|(r, _)| *r != row) {
            rows.extend(current.take());
        }
        if current.is_none() && rows.len() as u64 == max_rows {
            return Err(IngestError::refused(too_many()));
        }
        let (_, fields) = current.get_or_insert_with(|| (row, Vec::new()));
        if fields.len() <= column {
            fields.resize(column + 1, String::new());
        }
        fields[column] = text;
    }
    rows.extend(current);
    // A row's cells are usually in order; a sheet written otherwise is still read right.
    rows.sort_by_key(|(row, _)| *row);
    rows.dedup_by(|later, earlier| {
        if later.0 != earlier.0 {
            return false;
        }
        for (i, cell) in std::mem::take(&mut later.1).into_iter().enumerate() {
            if !cell.is_empty() {
                if earlier.1.len() <= i {
                    earlier.1.resize(i + 1, String::new());
                }
                earlier.1[i] = cell;
            }
        }
        true
    });
    // Rows share the width of the widest, as a CSV file's records would.
    let width = rows.iter().map(|(_, f)| f.len()).max().unwrap_or(0);
    for (_, fields) in &mut rows {
        fields.resize(width, String::new());
    }
    Ok(rows)
}

/// A cell as the text a CSV file would hold.
fn text(value: &DataRef<'_>) -> String {
    match value {
        DataRef::Empty => String::new(),
        DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::SharedString(s) => s.to_string(),
        DataRef::Int(i) => i.to_string(),
        DataRef::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        DataRef::Float(f) => f.to_string(),
        DataRef::Bool(b) => b.to_string(),
        DataRef::DateTime(d) => match d.as_datetime() {
            Some(t) if t.time() == chrono::NaiveTime::MIN => t.format("%Y-%m-%d").to_string(),
            Some(t) => t.format("%Y-%m-%dT%H:%M:%S").to_string(),
            None => d.as_f64().to_string(),
        },
        DataRef::Error(e) => format!("#{e}"),
    }
}

/// Refuses an archive that would take unbounded memory or time to open: too many entries, or an
/// entry too large or too compressed, by its declared sizes and then by what it really inflates
/// to (declared sizes can lie), counted as it streams.
pub fn check_archive(path: &Path) -> Result<(), IngestError> {
    let file = std::fs::File::open(path).context("the file cannot be read")?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| {
        IngestError::refused(format!(
            "the file is not an XLSX workbook (not a zip archive): {e}"
        ))
    })?;
    if archive.len() > MAX_ENTRIES {
        return Err(IngestError::refused(format!(
            "the archive holds {} entries (at most {MAX_ENTRIES}): refused as unsafe",
            archive.len()
        )));
    }
    let mut total = 0u64;
    for i in 0..archive.len() {
        let entry = archive
            .by_index_raw(i)
            .map_err(|e| IngestError::refused(format!("the archive is damaged: {e}")))?;
        let (name, size, packed) = (
            entry
                .name()
                .map_or_else(|_| format!("#{i}"), |n| n.to_string()),
            entry.size(),
            entry.compressed_size(),
        );
        drop(entry);
        refuse_if_unsafe(&name, size, packed, total)?;
        let mut entry = archive.by_index(i).map_err(|e| {
            IngestError::refused(format!("the archive entry `{name}` cannot be read: {e}"))
        })?;
        let inflated = std::io::copy(
            &mut (&mut entry).take(MAX_ENTRY_BYTES + 1),
            &mut std::io::sink(),
        )
        .map_err(|e| IngestError::refused(format!("the archive entry `{name}` is damaged: {e}")))?;
        refuse_if_unsafe(&name, inflated, packed, total)?;
        total += inflated;
    }
    Ok(())
}

fn refuse_if_unsafe(name: &str, size: u64, packed: u64, total: u64) -> Result<(), IngestError> {
    let refused = |why: String| {
        Err(IngestError::refused(format!(
            "the archive entry `{name}` {why}: refused as unsafe"
        )))
    };
    if size > MAX_ENTRY_BYTES {
        return refused(format!("inflates past {} MiB", MAX_ENTRY_BYTES >> 20));
    }
    if total + size > MAX_TOTAL_BYTES {
        return refused(format!(
            "takes the archive past {} MiB inflated",
            MAX_TOTAL_BYTES >> 20
        ));
    }
    if size > 1 << 20 && size / packed.max(1) > MAX_RATIO {
        return refused(format!(
            "is compressed {}:1 (at most {MAX_RATIO}:1)",
            size / packed.max(1)
        ));
    }
    Ok(())
}

/// Reads any `Read + Seek` as a workbook; for tests of in-memory files.
#[cfg(test)]
fn read_bytes(bytes: &[u8]) -> Result<Rows, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("t.xlsx");
    std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
    read(&path, 1).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write};

    use generators::xlsx::write;

    use super::*;

    fn workbook(rows: Vec<Vec<String>>) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        write(rows, &mut out).unwrap();
        out.into_inner()
    }

    fn strings(cells: &[&str]) -> Vec<String> {
        cells.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn a_written_workbook_reads_back_as_text() {
        let bytes = workbook(vec![
            strings(&["id", "walletId", "amount", "description"]),
            strings(&["007", "card-1", "12.50", "Fish & <chips>"]),
            strings(&["e-2", "card-2", "80", ""]),
        ]);
        let rows = read_bytes(&bytes).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[1],
            (2, strings(&["007", "card-1", "12.5", "Fish & <chips>"]))
        );
        assert_eq!(rows[2], (3, strings(&["e-2", "card-2", "80", ""])));
    }

    #[test]
    fn more_than_ten_thousand_records_are_refused_with_advice() {
        let rows = (0..=MAX_RECORDS + 1).map(|i| vec![format!("e-{i}")]);
        let bytes = workbook(rows.collect());
        let error = read_bytes(&bytes).unwrap_err();
        assert!(
            error.contains("more than 10000 records") && error.contains("CSV"),
            "{error}"
        );
        let exactly = (0..=MAX_RECORDS).map(|i| vec![format!("e-{i}")]);
        assert_eq!(
            read_bytes(&workbook(exactly.collect())).unwrap().len(),
            MAX_RECORDS + 1
        );
    }

    #[test]
    fn a_zip_bomb_is_refused_before_it_is_inflated() {
        let mut out = Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        zip.start_file(
            "xl/worksheets/sheet1.xml",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..80 {
            zip.write_all(&zeros).unwrap();
        }
        zip.finish().unwrap();
        let error = read_bytes(out.get_ref()).unwrap_err();
        assert!(error.contains("refused as unsafe"), "{error}");
    }

    #[test]
    fn a_sheet_using_far_columns_is_refused() {
        let mut row = vec![String::new(); MAX_COLUMNS + 1];
        row[MAX_COLUMNS] = "x".into();
        let error = read_bytes(&workbook(vec![strings(&["id"]), row])).unwrap_err();
        assert!(error.contains("at most 512 columns"), "{error}");
    }

    /// `templates/earn.xlsx` and `activities.xlsx` hold the rows of their CSV templates. After
    /// changing a CSV template, run this test with `REWARDS_WRITE_TEMPLATES=1` to write the
    /// workbooks again.
    #[test]
    fn the_workbook_templates_match_the_csv_templates() {
        for name in ["earn", "activities"] {
            workbook_matches_csv(name);
        }
    }

    fn workbook_matches_csv(name: &str) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates");
        let mut csv = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_path(dir.join(format!("{name}.csv")))
            .unwrap();
        let expected: Vec<Vec<String>> = csv
            .records()
            .map(|r| r.unwrap().iter().map(String::from).collect())
            .collect();
        if std::env::var_os("REWARDS_WRITE_TEMPLATES").is_some() {
            let file = std::fs::File::create(dir.join(format!("{name}.xlsx"))).unwrap();
            write(expected.clone(), file).unwrap();
        }
        let rows = read(&dir.join(format!("{name}.xlsx")), 1).unwrap();
        let normalise = |cell: &String| match store::meta::cell_value(cell) {
            serde_json::Value::Number(n) => n.to_string(),
            _ => cell.clone(),
        };
        for ((_, got), want) in rows.iter().zip(&expected) {
            let want: Vec<String> = want.iter().map(normalise).collect();
            assert_eq!(got, &want, "{name}");
        }
        assert_eq!(rows.len(), expected.len(), "{name}");
    }

    #[test]
    fn not_a_workbook_is_refused() {
        let error = read_bytes(b"id,walletId\n").unwrap_err();
        assert!(error.contains("not an XLSX workbook"), "{error}");
    }
}
