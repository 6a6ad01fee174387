//! Two texts compared line by line, side by side (a rule set's versions): the longest common
//! subsequence of their lines, the rest paired as changed, removed or added.

/// One row of a side-by-side comparison: the left line and the right line (numbered), either
/// absent where the other side has a line the first has not.
pub struct Row {
    pub left: Option<(usize, String)>,
    pub right: Option<(usize, String)>,
}

impl Row {
    /// `same`, `changed`, `removed` or `added`: how the row reads.
    pub fn kind(&self) -> &'static str {
        match (&self.left, &self.right) {
            (Some((_, a)), Some((_, b))) if a == b => "same",
            (Some(_), Some(_)) => "changed",
            (Some(_), None) => "removed",
            _ => "added",
        }
    }
}

/// The most lines a side may have to be compared (the table grows as their product).
pub const MAX_LINES: usize = 3_000;

/// `a` and `b` side by side.
pub fn side_by_side(a: &str, b: &str) -> Vec<Row> {
    let a: Vec<&str> = a.lines().take(MAX_LINES).collect();
    let b: Vec<&str> = b.lines().take(MAX_LINES).collect();
    // common[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut common = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut rows = Vec::new();
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    let flush = |rows: &mut Vec<Row>,
                 removed: &mut Vec<(usize, String)>,
                 added: &mut Vec<(usize, String)>| {
        let (mut r, mut d) = (removed.drain(..), added.drain(..));
        loop {
            match (r.next(), d.next()) {
                (None, None) => break,
                (left, right) => rows.push(Row { left, right }),
            }
        }
    };
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            flush(&mut rows, &mut removed, &mut added);
            rows.push(Row {
                left: Some((i + 1, a[i].to_owned())),
                right: Some((j + 1, b[j].to_owned())),
            });
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || common[i][j + 1] >= common[i + 1][j]) {
            added.push((j + 1, b[j].to_owned()));
            j += 1;
        } else {
            removed.push((i + 1, a[i].to_owned()));
            i += 1;
        }
    }
    flush(&mut rows, &mut removed, &mut added);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(a: &str, b: &str) -> Vec<&'static str> {
        side_by_side(a, b).iter().map(Row::kind).collect()
    }

    #[test]
    fn lines_are_paired_as_kept_changed_removed_or_added() {
        assert_eq!(kinds("a\nb\nc", "a\nb\nc"), ["same", "same", "same"]);
        assert_eq!(kinds("a\nb\nc", "a\nx\nc"), ["same", "changed", "same"]);
        assert_eq!(kinds("a\nb\nc", "a\nc"), ["same", "removed", "same"]);
        assert_eq!(
            kinds("a\nc", "a\nb\nc\nd"),
            ["same", "added", "same", "added"]
        );
        assert!(side_by_side("", "").is_empty());
        let rows = side_by_side("x = 1\ny = 2", "x = 1\ny = 3");
        assert_eq!(rows[1].left, Some((2, "y = 2".into())));
        assert_eq!(rows[1].right, Some((2, "y = 3".into())));
    }
}
