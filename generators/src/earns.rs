//! Realistic earn files for tests and benchmarks: N rows over M wallets in the canonical layout
//! (CSV, XLSX or Parquet), with an optional share of bad rows (one of each kind in turn).
//! Deterministic for a seed.

use std::io::Write;
use std::path::Path;

use chrono::NaiveDate;
use columnar::Values;

/// What to generate.
#[derive(Debug, Clone)]
pub struct Spec {
    pub rows: u64,
    pub wallets: u64,
    /// Wallet references are `<prefix><n>`, n from 0 to `wallets - 1`.
    pub wallet_prefix: String,
    /// Between 0 and 1: the share of rows that are bad.
    pub bad_share: f64,
    pub seed: u64,
    /// The month of 2026 the rows are dated in (1 to 12; days 1 to 28).
    pub month: u32,
}

const STORES: [&str; 6] = ["A1", "A2", "B7", "C3", "D9", "E4"];
const WHAT: [&str; 5] = ["Coffee", "Weekly shop", "Fuel", "Books", "Lunch"];

/// A small, fast pseudo-random sequence (xorshift64*); no need for more here. The same seed
/// gives the same sequence (the file fuzz test replays a seed with it).
pub struct Sequence(u64);

impl Sequence {
    pub fn new(seed: u64) -> Self {
        Sequence(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// One generated row: a good earn, or (`bad`) one of five kinds of bad row in turn.
struct Row {
    n: u64,
    wallet: u64,
    cents: u64,
    day: u64,
    hour: u64,
    minute: u64,
    store: &'static str,
    what: &'static str,
    bad: Option<u64>,
}

/// Row `n`'s earn id: a random-looking UUID (version 4), as a client's system would make, the
/// same for the same seed and row.
fn earn_id(seed: u64, n: u64) -> String {
    let mut random = Sequence::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ n);
    random.next_u64();
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&random.next_u64().to_le_bytes());
    bytes[8..].copy_from_slice(&random.next_u64().to_le_bytes());
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// The rows of `spec`, in order; the same seed gives the same rows.
fn rows(spec: &Spec) -> impl Iterator<Item = Row> {
    let mut random = Sequence::new(spec.seed);
    let bad_every = if spec.bad_share > 0.0 {
        (1.0 / spec.bad_share).round().max(1.0) as u64
    } else {
        u64::MAX
    };
    let wallets = spec.wallets.max(1);
    (0..spec.rows).map(move |n| {
        let r = random.next_u64();
        Row {
            n,
            wallet: r % wallets,
            cents: 100 + (r >> 20) % 20_000,
            day: 1 + (r >> 40) % 28,
            hour: (r >> 28) % 24,
            minute: (r >> 33) % 60,
            store: STORES[(r >> 8) as usize % 6],
            what: WHAT[(r >> 16) as usize % 5],
            bad: (n % bad_every == bad_every - 1).then_some((n / bad_every) % 5),
        }
    })
}

/// Writes the file to `out`.
pub fn earn_csv(spec: &Spec, out: impl Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    writeln!(out, "id,walletId,amount,date,description,meta.store")?;
    let (seed, prefix, month) = (spec.seed, &spec.wallet_prefix, spec.month);
    for row in rows(spec) {
        let Row {
            n,
            wallet,
            cents,
            day,
            ..
        } = row;
        let amount = format!("{}.{:02}", cents / 100, cents % 100);
        let mut line = format!(
            "{},{prefix}{wallet},{amount},2026-{month:02}-{day:02}T{:02}:{:02}:00Z,{},{}",
            earn_id(seed, n),
            row.hour,
            row.minute,
            row.what,
            row.store
        );
        if let Some(kind) = row.bad {
            line = match kind {
                0 => line.replacen(&amount, "12,50", 1),
                1 => line.replacen(&format!("2026-{month:02}-"), "20261", 1),
                2 => line.replacen(&format!("{prefix}{wallet},"), "no-such-wallet,", 1),
                3 => format!(
                    "{},{prefix}0,1,2026-{month:02}-01,Repeat,A1",
                    earn_id(seed, 0)
                ),
                _ => format!("{},{prefix}{wallet}", earn_id(seed, n)),
            };
        }
        writeln!(out, "{line}")?;
    }
    out.flush()
}

/// Rows per row group of a generated Parquet file.
const ROW_GROUP: usize = 100_000;

/// Writes the rows of `earn_csv` as a Parquet file at `path`, typed as a data warehouse would
/// unload them: `amount` DECIMAL(18,2), `date` a UTC timestamp, `meta` a struct. A typed file
/// cannot hold a malformed amount or date, so those bad rows have none (`missing_field`), as
/// does a short row; unknown wallets and repeated ids are as in the CSV.
pub fn earn_parquet(spec: &Spec, path: &Path) -> Result<(), String> {
    let mut sink = columnar::ParquetSink::create(path)?;
    let (seed, prefix) = (spec.seed, &spec.wallet_prefix);
    let mut batch = Columns::default();
    for row in rows(spec) {
        let mut id = earn_id(seed, row.n);
        let mut wallet = Some(format!("{prefix}{}", row.wallet));
        let mut amount = Some(format!("{}.{:02}", row.cents / 100, row.cents % 100));
        let mut date = micros(spec.month, row.day, row.hour, row.minute);
        let (mut what, mut store) = (Some(row.what.to_string()), Some(row.store.to_string()));
        match row.bad {
            Some(0) => amount = None,
            Some(1) => date = None,
            Some(2) => wallet = Some("no-such-wallet".into()),
            Some(3) => {
                id = earn_id(seed, 0);
                wallet = Some(format!("{prefix}0"));
                amount = Some("1.00".into());
                date = micros(spec.month, 1, 0, 0);
                what = Some("Repeat".into());
                store = Some("A1".into());
            }
            Some(_) => (amount, date, what, store) = (None, None, None, None),
            None => {}
        }
        batch.push(id, wallet, amount, date, what, store);
        if batch.ids.len() == ROW_GROUP {
            sink.write(std::mem::take(&mut batch).into_columns())?;
        }
    }
    if !batch.ids.is_empty() || spec.rows == 0 {
        sink.write(batch.into_columns())?;
    }
    sink.finish()
}

/// 2026-`month`-`day` at `hour`:`minute` UTC, in microseconds since 1970.
fn micros(month: u32, day: u64, hour: u64, minute: u64) -> Option<i64> {
    NaiveDate::from_ymd_opt(2026, month, day as u32)
        .and_then(|d| d.and_hms_opt(hour as u32, minute as u32, 0))
        .map(|t| t.and_utc().timestamp_micros())
}

/// A batch of generated rows, column by column.
#[derive(Default)]
struct Columns {
    ids: Vec<Option<String>>,
    wallets: Vec<Option<String>>,
    amounts: Vec<Option<String>>,
    dates: Vec<Option<i64>>,
    descriptions: Vec<Option<String>>,
    stores: Vec<Option<String>>,
}

impl Columns {
    fn push(
        &mut self,
        id: String,
        wallet: Option<String>,
        amount: Option<String>,
        date: Option<i64>,
        description: Option<String>,
        store: Option<String>,
    ) {
        self.ids.push(Some(id));
        self.wallets.push(wallet);
        self.amounts.push(amount);
        self.dates.push(date);
        self.descriptions.push(description);
        self.stores.push(store);
    }

    fn into_columns(self) -> Vec<(String, Values)> {
        vec![
            ("id".into(), Values::Text(self.ids)),
            ("walletId".into(), Values::Text(self.wallets)),
            (
                "amount".into(),
                Values::Decimal {
                    values: self.amounts,
                    precision: 18,
                    scale: 2,
                },
            ),
            (
                "date".into(),
                Values::Timestamp {
                    micros: self.dates,
                    utc: true,
                },
            ),
            ("description".into(), Values::Text(self.descriptions)),
            (
                "meta".into(),
                Values::Struct(vec![("store".into(), Values::Text(self.stores))]),
            ),
        ]
    }
}

/// Writes the same rows as `earn_csv` as an XLSX workbook (cells that are plainly numbers as
/// numbers). A spreadsheet of more than 10,000 rows is made too, for the refusal's tests.
pub fn earn_xlsx(spec: &Spec, out: impl Write + std::io::Seek) -> std::io::Result<()> {
    let mut csv_bytes = Vec::new();
    earn_csv(spec, &mut csv_bytes)?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv_bytes.as_slice());
    let rows = reader
        .records()
        .map(|r| r.map(|r| r.iter().map(String::from).collect::<Vec<_>>()))
        .collect::<Result<Vec<_>, _>>()?;
    crate::xlsx::write(rows, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ingest::batch::rows::Layout;

    #[test]
    fn good_rows_are_valid_and_the_bad_share_is_bad() {
        let spec = Spec {
            rows: 1_000,
            wallets: 10,
            wallet_prefix: "card-".into(),
            bad_share: 0.1,
            seed: 7,
            month: 10,
        };
        let mut bytes = Vec::new();
        earn_csv(&spec, &mut bytes).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let layout = Layout::from_header(&header).unwrap();
        let (mut good, mut bad) = (0, 0);
        for (i, line) in lines.enumerate() {
            let fields: Vec<&str> = line.split(',').collect();
            let earn = layout.earn(i as u64 + 2, &fields);
            let unknown = fields.get(1) == Some(&"no-such-wallet");
            let repeat = fields.get(4) == Some(&"Repeat");
            match earn {
                Ok(_) if !unknown && !repeat => good += 1,
                _ => bad += 1,
            }
        }
        assert_eq!((good, bad), (900, 100));
        let ids: std::collections::HashSet<&str> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap())
            .collect();
        assert_eq!(
            ids.len(),
            980,
            "ids are distinct, but for the 20 repeats of the first"
        );
        assert!(ids.iter().all(|id| uuid::Uuid::parse_str(id).is_ok()));
        let mut again = Vec::new();
        earn_csv(&spec, &mut again).unwrap();
        assert_eq!(again, text.as_bytes(), "the same seed, the same file");
    }

    /// `earn` with its amount in its shortest exact form (`1.00` as `1`).
    fn exact(mut earn: store::EarnInput) -> store::EarnInput {
        let amount: rules::Decimal = earn.amount.parse().unwrap();
        earn.amount = amount.normalize().to_string();
        earn
    }

    #[test]
    fn parquet_holds_the_csv_rows_typed() {
        let spec = Spec {
            rows: 250_001,
            wallets: 10,
            wallet_prefix: "card-".into(),
            bad_share: 0.1,
            seed: 3,
            month: 10,
        };
        let mut bytes = Vec::new();
        earn_csv(&spec, &mut bytes).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let csv_layout = Layout::from_header(&header).unwrap();

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("earn.parquet");
        earn_parquet(&spec, &path).unwrap();
        let mut parquet = columnar::ParquetRows::open(&path).unwrap();
        assert_eq!(parquet.len(), spec.rows);
        let layout = Layout::from_header(&parquet.header()).unwrap();
        let mut good = 0;
        for (i, line) in lines.enumerate() {
            let fields: Vec<&str> = line.split(',').collect();
            let (row, typed, _) = parquet.next_row().unwrap().unwrap();
            assert_eq!(row, i as u64 + 1);
            let (from_csv, from_parquet) = (
                csv_layout.earn(i as u64 + 2, &fields),
                layout.earn(row, &typed),
            );
            match from_csv {
                Ok(earn) if fields.get(1) != Some(&"no-such-wallet") => {
                    // The same earn; a decimal column writes `1` as `1.00`.
                    assert_eq!(exact(from_parquet.unwrap()), exact(earn), "row {row}");
                    good += 1;
                }
                Ok(_) => assert_eq!(typed[1], "no-such-wallet"),
                Err(_) => assert!(from_parquet.is_err(), "row {row}: {typed:?}"),
            }
        }
        assert!(parquet.next_row().unwrap().is_none());
        // Good rows and the repeats (valid rows whose id comes again), more than one row group.
        assert_eq!(good, 250_001 - 25_000 + 5_000);
    }

    /// `templates/earn.parquet` holds the rows of `templates/earn.csv`, typed. After changing
    /// the CSV template, run this test with `REWARDS_WRITE_TEMPLATES=1` to write it again.
    #[test]
    fn the_parquet_template_matches_the_csv_template() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates");
        let text = std::fs::read_to_string(dir.join("earn.csv")).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let layout = Layout::from_header(&header).unwrap();
        let expected: Vec<store::EarnInput> = lines
            .enumerate()
            .map(|(i, line)| {
                let fields: Vec<&str> = line.split(',').collect();
                layout.earn(i as u64 + 2, &fields).unwrap()
            })
            .collect();
        if std::env::var_os("REWARDS_WRITE_TEMPLATES").is_some() {
            let texts = |f: &dyn Fn(&store::EarnInput) -> Option<String>| {
                Values::Text(expected.iter().map(f).collect())
            };
            let meta = |key: &'static str| {
                texts(&move |e| e.meta.as_ref()?[key].as_str().map(String::from))
            };
            let mut sink = columnar::ParquetSink::create(&dir.join("earn.parquet")).unwrap();
            sink.write(vec![
                ("id".into(), texts(&|e| Some(e.earn_id.clone()))),
                ("walletId".into(), texts(&|e| Some(e.wallet.clone()))),
                (
                    "amount".into(),
                    Values::Decimal {
                        values: expected.iter().map(|e| Some(e.amount.clone())).collect(),
                        precision: 18,
                        scale: 2,
                    },
                ),
                (
                    "date".into(),
                    Values::Timestamp {
                        micros: expected
                            .iter()
                            .map(|e| Some(e.date.timestamp_micros()))
                            .collect(),
                        utc: true,
                    },
                ),
                ("description".into(), texts(&|e| e.description.clone())),
                ("comment".into(), texts(&|e| e.comment.clone())),
                (
                    "meta".into(),
                    Values::Struct(vec![
                        ("store".into(), meta("store")),
                        ("channel".into(), meta("channel")),
                    ]),
                ),
            ])
            .unwrap();
            sink.finish().unwrap();
        }
        let mut parquet = columnar::ParquetRows::open(&dir.join("earn.parquet")).unwrap();
        let typed = Layout::from_header(&parquet.header()).unwrap();
        let mut read = Vec::new();
        while let Some((row, fields, _)) = parquet.next_row().unwrap() {
            read.push(exact(typed.earn(row, &fields).unwrap()));
        }
        let expected: Vec<_> = expected.into_iter().map(exact).collect();
        assert_eq!(read, expected);
    }
}
