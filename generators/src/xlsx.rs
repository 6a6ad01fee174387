//! A one-sheet workbook (XLSX) from rows of cells, as a client's spreadsheet would hold them.

use std::io::{Seek, Write};

/// Writes `rows` as a one-sheet workbook: cells that are plainly numbers as numbers, the rest as
/// text (inline strings, so no shared-string table is needed).
pub fn write(
    rows: impl IntoIterator<Item = Vec<String>>,
    out: impl Write + Seek,
) -> std::io::Result<()> {
    const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#;
    const RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#;
    const WORKBOOK: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="earn" sheetId="1" r:id="rId1"/></sheets></workbook>"#;
    const WORKBOOK_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#;
    let mut zip = zip::ZipWriter::new(out);
    let options = zip::write::SimpleFileOptions::default();
    for (name, content) in [
        ("[Content_Types].xml", CONTENT_TYPES),
        ("_rels/.rels", RELS),
        ("xl/workbook.xml", WORKBOOK),
        ("xl/_rels/workbook.xml.rels", WORKBOOK_RELS),
    ] {
        zip.start_file(name, options)?;
        zip.write_all(content.as_bytes())?;
    }
    zip.start_file("xl/worksheets/sheet1.xml", options)?;
    let mut sheet = std::io::BufWriter::with_capacity(1 << 16, &mut zip);
    sheet.write_all(
        br#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#,
    )?;
    for (r, row) in rows.into_iter().enumerate() {
        write!(sheet, r#"<row r="{}">"#, r + 1)?;
        for (c, cell) in row.iter().enumerate().filter(|(_, c)| !c.is_empty()) {
            let at = format!("{}{}", column_name(c), r + 1);
            if store::meta::cell_value(cell).is_number() {
                write!(sheet, r#"<c r="{at}"><v>{cell}</v></c>"#)?;
            } else {
                let cell = escape(cell);
                write!(
                    sheet,
                    r#"<c r="{at}" t="inlineStr"><is><t>{cell}</t></is></c>"#
                )?;
            }
        }
        sheet.write_all(b"</row>")?;
    }
    sheet.write_all(b"</sheetData></worksheet>")?;
    sheet.flush()?;
    drop(sheet);
    zip.finish()?;
    Ok(())
}

/// `A`, `B`, ... `Z`, `AA`, ...
fn column_name(index: usize) -> String {
    let mut name = Vec::new();
    let mut n = index + 1;
    while n > 0 {
        name.push(b'A' + ((n - 1) % 26) as u8);
        n = (n - 1) / 26;
    }
    name.iter().rev().map(|b| *b as char).collect()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
