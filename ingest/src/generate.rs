//! Realistic earn files for tests and benchmarks: N rows over M wallets in the canonical layout
//! (CSV or XLSX), with an optional share of bad rows (one of each kind in turn). Deterministic for
//! a seed.

use std::io::Write;

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
}

const STORES: [&str; 6] = ["A1", "A2", "B7", "C3", "D9", "E4"];
const WHAT: [&str; 5] = ["Coffee", "Weekly shop", "Fuel", "Books", "Lunch"];

/// A small, fast pseudo-random sequence (xorshift64*); no need for more here.
struct Sequence(u64);

impl Sequence {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Writes the file to `out`.
pub fn earn_csv(spec: &Spec, out: impl Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    writeln!(out, "id,walletId,amount,date,description,meta.store")?;
    let mut random = Sequence(spec.seed.max(1));
    let bad_every = if spec.bad_share > 0.0 {
        (1.0 / spec.bad_share).round().max(1.0) as u64
    } else {
        u64::MAX
    };
    for row in 0..spec.rows {
        let r = random.next();
        let wallet = r % spec.wallets.max(1);
        let cents = 100 + (r >> 20) % 20_000;
        let day = 1 + (r >> 40) % 28;
        let (store, what) = (STORES[(r >> 8) as usize % 6], WHAT[(r >> 16) as usize % 5]);
        let mut line = format!(
            "g-{}-{row},{}{wallet},{}.{:02},2026-10-{day:02}T{:02}:{:02}:00Z,{what},{store}",
            spec.seed,
            spec.wallet_prefix,
            cents / 100,
            cents % 100,
            (r >> 28) % 24,
            (r >> 33) % 60
        );
        if row % bad_every == bad_every - 1 {
            line = match (row / bad_every) % 5 {
                0 => line.replacen(&format!("{}.{:02}", cents / 100, cents % 100), "12,50", 1),
                1 => line.replacen("2026-10-", "20261", 1),
                2 => line.replacen(
                    &format!("{}{wallet},", spec.wallet_prefix),
                    "no-such-wallet,",
                    1,
                ),
                3 => format!(
                    "g-{}-0,{}0,1,2026-10-01,Repeat,A1",
                    spec.seed, spec.wallet_prefix
                ),
                _ => format!("g-{}-{row},{}{wallet}", spec.seed, spec.wallet_prefix),
            };
        }
        writeln!(out, "{line}")?;
    }
    out.flush()
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
    use crate::rows::Layout;

    #[test]
    fn good_rows_are_valid_and_the_bad_share_is_bad() {
        let spec = Spec {
            rows: 1_000,
            wallets: 10,
            wallet_prefix: "card-".into(),
            bad_share: 0.1,
            seed: 7,
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
        let mut again = Vec::new();
        earn_csv(&spec, &mut again).unwrap();
        assert_eq!(again, text.as_bytes(), "the same seed, the same file");
    }
}
