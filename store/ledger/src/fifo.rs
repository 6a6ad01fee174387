//! Which tokens a wallet still holds, without a row per earn to say so. A wallet's EARNs, in
//! (date, id) order, are spent oldest first, so one position per wallet says what is left: every
//! earn before it is spent, the earn at it has `taken` of its amount spent, and every earn after
//! it is whole. Only what breaks that order has a row of its own in `lots_aside`: an earn
//! recorded after tokens dated later were already spent (a backdated file row), one that expired
//! out of turn (its programme's expiry policy changed), and, in a ledger migrated from the
//! lot-per-earn schema, an earn after the wallet's oldest open lot whose lot was not whole. An
//! aside row overrides the position for its earn.
//!
//! This module is the arithmetic, for both backends (`D` is how the backend hands dates back);
//! the callers read the rows and write what it decides.

/// What is left of the lot of earn `t` (SQL over `transactions t`, its wallet `w` and its aside
/// row `a`, left-joined): the arithmetic below, as the database reads it.
macro_rules! lot_left {
    () => {
        "CASE WHEN a.transaction_id IS NOT NULL THEN a.remaining \
         WHEN w.fifo_id IS NULL OR (t.date, t.id) > (w.fifo_date, w.fifo_id) THEN t.amount \
         WHEN t.id = w.fifo_id THEN t.amount - w.fifo_taken ELSE 0 END"
    };
}
pub(crate) use lot_left;

/// A wallet's spending position: the earn `(date, id)` and how much of it is spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position<D> {
    pub date: D,
    pub id: String,
    pub taken: i64,
}

/// An earn in the main sequence (at or after the position), in (date, id) order.
#[derive(Debug, Clone)]
pub struct Earn<D> {
    pub date: D,
    pub id: String,
    pub amount: i64,
    pub expires_at: Option<D>,
}

/// A row of `lots_aside`: what is left of the earn `id`.
#[derive(Debug, Clone, PartialEq)]
pub struct Aside<D> {
    pub date: D,
    pub id: String,
    pub remaining: i64,
    pub expires_at: Option<D>,
}

/// An earn or aside row as the callers read it: (earn id, date, amount or what is left,
/// expiry).
pub(crate) type LotRow<D> = (String, D, i64, Option<D>);

impl<D> From<LotRow<D>> for Earn<D> {
    fn from((id, date, amount, expires_at): LotRow<D>) -> Self {
        Earn {
            date,
            id,
            amount,
            expires_at,
        }
    }
}

impl<D> From<LotRow<D>> for Aside<D> {
    fn from((id, date, remaining, expires_at): LotRow<D>) -> Self {
        Aside {
            date,
            id,
            remaining,
            expires_at,
        }
    }
}

/// What a spend decided: the new position (if it moved), and the aside rows to update (new
/// remaining) or delete (no longer needed: nothing left, and the position has passed them).
#[derive(Debug, PartialEq)]
pub(crate) struct Spent<D> {
    pub position: Option<Position<D>>,
    pub aside_updates: Vec<(String, i64)>,
    pub aside_deletes: Vec<String>,
    /// Aside rows to insert: earns after the position emptied out of turn (by expiry).
    pub aside_inserts: Vec<Aside<D>>,
    /// What was taken from each earn, in the order taken: (earn id, micro-tokens).
    pub takes: Vec<(String, i64)>,
    /// When each lot of `takes` expires, in the same order.
    pub expiries: Vec<Option<D>>,
}

impl<D: Copy> Spent<D> {
    /// The new position as a wallet UPDATE binds it beside the old (`COALESCE`): its date,
    /// earn and what is taken of that earn, each None when the position did not move.
    pub fn moved_to(&self) -> (Option<D>, Option<&str>, Option<i64>) {
        let p = self.position.as_ref();
        (
            p.map(|p| p.date),
            p.map(|p| p.id.as_str()),
            p.map(|p| p.taken),
        )
    }
}

impl<D> Default for Spent<D> {
    fn default() -> Self {
        Spent {
            position: None,
            aside_updates: Vec::new(),
            aside_deletes: Vec::new(),
            aside_inserts: Vec::new(),
            takes: Vec::new(),
            expiries: Vec::new(),
        }
    }
}

/// Takes `amount` micro-tokens, oldest first, from a wallet at `position` (None: nothing spent
/// yet) holding `aside` (its aside rows, in (date, id) order: all of them, or the first ones,
/// more of which are handed over with `more_aside` while `needs_aside_before` or
/// `needs_aside` says so). Main-sequence earns are offered in order with `earn` until it answers
/// false; then `finish`. `take_first` needs every aside row, unless it covers the amount: then
/// `aside` need only hold that earn's own row, the others being neither taken from nor passed.
pub(crate) struct Taker<D> {
    left: i64,
    position: Option<Position<D>>,
    moved: bool,
    aside: Vec<Aside<D>>,
    next_aside: usize,
    touched: Vec<bool>,
    /// Aside rows the taker made (`take_first`): inserted, not updated, if still needed.
    made: Vec<bool>,
    takes: Vec<(String, i64)>,
    expiries: Vec<Option<D>>,
}

impl<D: Ord + Clone> Taker<D> {
    pub fn new(amount: i64, position: Option<Position<D>>, aside: Vec<Aside<D>>) -> Taker<D> {
        let touched = vec![false; aside.len()];
        let made = touched.clone();
        Taker {
            left: amount,
            position,
            moved: false,
            aside,
            next_aside: 0,
            touched,
            made,
            takes: Vec::new(),
            expiries: Vec::new(),
        }
    }

    /// Still to take (before `finish`, which may take more).
    pub fn left(&self) -> i64 {
        self.left
    }

    /// Whether the aside rows handed over end before `(date, id)`: with more unread, the next
    /// ones are needed before that earn is offered.
    pub fn needs_aside_before(&self, date: &D, id: &str) -> bool {
        self.aside
            .last()
            .is_none_or(|a| (&a.date, a.id.as_str()) < (date, id))
    }

    /// Whether the aside rows handed over and not passed yet hold less than is left to take:
    /// with more unread, `finish` needs the next ones.
    pub fn needs_aside(&self) -> bool {
        let held: i64 = self.aside[self.next_aside..]
            .iter()
            .map(|a| a.remaining)
            .sum();
        held < self.left
    }

    /// The last aside row handed over, to read the next ones after.
    pub fn last_aside(&self) -> Option<(&D, &str)> {
        self.aside.last().map(|a| (&a.date, a.id.as_str()))
    }

    /// The wallet's next aside rows, in order after those handed over before.
    pub fn more_aside(&mut self, rows: Vec<Aside<D>>) {
        self.touched.extend(rows.iter().map(|_| false));
        self.made.extend(rows.iter().map(|_| false));
        self.aside.extend(rows);
    }

    /// Takes from `earn`'s own lot first, before any other (a reversal takes back the tokens
    /// of the earn it reverses): from its aside row, from the earn at the position, or from an
    /// earn still whole after it, which then gets an aside row saying what is left of it. An
    /// earn before the position without an aside row has nothing left. Called before `earn`.
    pub fn take_first(&mut self, earn: &Earn<D>) {
        let key = (&earn.date, earn.id.as_str());
        if let Some(i) = self.aside.iter().position(|a| a.id == earn.id) {
            let a = &mut self.aside[i];
            let take = a.remaining.min(self.left);
            if take > 0 {
                a.remaining -= take;
                self.left -= take;
                self.touched[i] = true;
                self.took(&earn.id, take, &earn.expires_at);
            }
            return;
        }
        match &mut self.position {
            Some(p) if p.id == earn.id => {
                let take = (earn.amount - p.taken).min(self.left);
                if take > 0 {
                    p.taken += take;
                    self.moved = true;
                    self.left -= take;
                    self.took(&earn.id, take, &earn.expires_at);
                }
            }
            Some(p) if key < (&p.date, p.id.as_str()) => {}
            _ => {
                let take = earn.amount.min(self.left);
                if take == 0 {
                    return;
                }
                self.left -= take;
                self.took(&earn.id, take, &earn.expires_at);
                let at = self
                    .aside
                    .partition_point(|a| (&a.date, a.id.as_str()) < key);
                let row = Aside {
                    date: earn.date.clone(),
                    id: earn.id.clone(),
                    remaining: earn.amount - take,
                    expires_at: earn.expires_at.clone(),
                };
                self.aside.insert(at, row);
                self.touched.insert(at, true);
                self.made.insert(at, true);
            }
        }
    }

    /// Records `take` micro-tokens taken from the lot of earn `id`, which expires at
    /// `expires_at`.
    fn took(&mut self, id: &str, take: i64, expires_at: &Option<D>) {
        self.takes.push((id.to_string(), take));
        self.expiries.push(expires_at.clone());
    }

    /// Takes from the aside rows ordered before `(date, id)` (all of them with None).
    fn take_aside_before(&mut self, before: Option<(&D, &str)>) {
        while self.left > 0 && self.next_aside < self.aside.len() {
            let a = &mut self.aside[self.next_aside];
            if before.is_some_and(|(date, id)| (&a.date, a.id.as_str()) >= (date, id)) {
                return;
            }
            if a.remaining > 0 {
                let take = a.remaining.min(self.left);
                a.remaining -= take;
                self.left -= take;
                self.touched[self.next_aside] = true;
                self.takes.push((a.id.clone(), take));
                self.expiries.push(a.expires_at.clone());
            }
            self.next_aside += 1;
        }
    }

    /// Offers the next main-sequence earn; false once the amount is covered.
    pub fn earn(&mut self, earn: &Earn<D>) -> bool {
        self.take_aside_before(Some((&earn.date, &earn.id)));
        if self.left == 0 {
            return false;
        }
        if self.aside.iter().any(|a| a.id == earn.id) {
            return true;
        }
        let taken = match &self.position {
            Some(p) if p.id == earn.id => p.taken,
            _ => 0,
        };
        let take = (earn.amount - taken).min(self.left);
        if take > 0 {
            self.left -= take;
            self.took(&earn.id, take, &earn.expires_at);
            self.position = Some(Position {
                date: earn.date.clone(),
                id: earn.id.clone(),
                taken: taken + take,
            });
            self.moved = true;
        }
        self.left > 0
    }

    /// What was decided, with what was taken from each earn (less than asked for when the
    /// lots do not cover it).
    pub fn finish(mut self) -> Spent<D> {
        self.take_aside_before(None);
        let mut spent = Spent {
            takes: self.takes,
            expiries: self.expiries,
            ..Spent::default()
        };
        for ((a, touched), made) in self.aside.iter().zip(&self.touched).zip(&self.made) {
            let needed = a.remaining > 0 || after(a, self.position.as_ref());
            match (needed, made) {
                (true, true) => spent.aside_inserts.push(a.clone()),
                (false, true) => {}
                (false, false) => spent.aside_deletes.push(a.id.clone()),
                (true, false) if *touched => {
                    spent.aside_updates.push((a.id.clone(), a.remaining));
                }
                (true, false) => {}
            }
        }
        if self.moved {
            spent.position = self.position;
        }
        spent
    }
}

/// Gives tokens back into the lots they were taken from (a refund of a burn): `gifts` is each
/// earn the burn took from, with what it took. Whatever part of the wallet an earn is in now
/// (an aside row, the position, spent before it), its lot holds that much more afterwards.
/// `Err` names an earn the wallet holds whole after its position: nothing was taken from it.
pub(crate) fn give_back<D: Ord + Clone>(
    position: Option<Position<D>>,
    aside: &[Aside<D>],
    gifts: &[(Earn<D>, i64)],
) -> Result<Spent<D>, String> {
    let mut new_position = position.clone();
    // The aside rows the gifts change, each with whether it exists already.
    let mut rows: Vec<(Aside<D>, bool)> = Vec::new();
    for (earn, amount) in gifts {
        if let Some((row, _)) = rows.iter_mut().find(|(a, _)| a.id == earn.id) {
            row.remaining += amount;
        } else if let Some(a) = aside.iter().find(|a| a.id == earn.id) {
            let row = Aside {
                remaining: a.remaining + amount,
                ..a.clone()
            };
            rows.push((row, true));
        } else {
            match &mut new_position {
                Some(p) if p.id == earn.id && p.taken >= *amount => p.taken -= amount,
                Some(p) if (&earn.date, earn.id.as_str()) < (&p.date, p.id.as_str()) => {
                    let row = Aside {
                        date: earn.date.clone(),
                        id: earn.id.clone(),
                        remaining: *amount,
                        expires_at: earn.expires_at.clone(),
                    };
                    rows.push((row, false));
                }
                _ => {
                    return Err(format!(
                        "less was spent of earn {} than is given back",
                        earn.id
                    ));
                }
            }
        }
    }
    let mut spent = Spent::default();
    for (row, exists) in rows {
        match exists {
            true => spent.aside_updates.push((row.id, row.remaining)),
            false => spent.aside_inserts.push(row),
        }
    }
    if new_position != position {
        spent.position = new_position;
    }
    Ok(spent)
}

/// Whether aside row `a` lies after `position` (it then marks a main-sequence earn).
fn after<D: Ord>(a: &Aside<D>, position: Option<&Position<D>>) -> bool {
    position.is_none_or(|p| (&a.date, a.id.as_str()) > (&p.date, p.id.as_str()))
}

/// One lot that expires: the earn, what was left of it, and when it expired.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Due<D> {
    pub id: String,
    pub remaining: i64,
    pub expires_at: D,
}

/// A wallet's expiry at `at`: the lots due, the changes to its position and aside rows, and the
/// earliest expiry of what is left (None: nothing left expires).
#[derive(Debug, PartialEq)]
pub(crate) struct Expired<D> {
    pub due: Vec<Due<D>>,
    pub spent: Spent<D>,
    pub next: Option<D>,
}

/// Everything due at `at` in a wallet at `position` holding `aside` and the main-sequence earns
/// `main` (all of them from the position on, in order).
pub(crate) fn expire<D: Ord + Clone>(
    at: &D,
    position: Option<Position<D>>,
    aside: Vec<Aside<D>>,
    main: &[Earn<D>],
) -> Expired<D> {
    let mut due = Vec::new();
    let mut next: Option<D> = None;
    let mut keep = |expires_at: &Option<D>| {
        if let Some(e) = expires_at {
            next = Some(next.take().map_or(e.clone(), |n| n.min(e.clone())));
        }
    };
    let mut spent = Spent::default();
    for a in &aside {
        match &a.expires_at {
            Some(e) if a.remaining > 0 && e <= at => {
                due.push(Due {
                    id: a.id.clone(),
                    remaining: a.remaining,
                    expires_at: e.clone(),
                });
            }
            _ if a.remaining > 0 => keep(&a.expires_at),
            _ => {}
        }
    }
    // The main sequence: due earns at its head move the position; later ones go aside, empty.
    let mut new_position = position.clone();
    let mut at_head = true;
    let mut holes = Vec::new();
    for earn in main {
        if aside.iter().any(|a| a.id == earn.id) {
            continue;
        }
        let taken = match &position {
            Some(p) if p.id == earn.id => p.taken,
            _ => 0,
        };
        let remaining = earn.amount - taken;
        if remaining <= 0 {
            continue;
        }
        match &earn.expires_at {
            Some(e) if e <= at => {
                due.push(Due {
                    id: earn.id.clone(),
                    remaining,
                    expires_at: e.clone(),
                });
                if at_head {
                    new_position = Some(Position {
                        date: earn.date.clone(),
                        id: earn.id.clone(),
                        taken: earn.amount,
                    });
                } else {
                    holes.push(Aside {
                        date: earn.date.clone(),
                        id: earn.id.clone(),
                        remaining: 0,
                        expires_at: earn.expires_at.clone(),
                    });
                }
            }
            expires_at => {
                at_head = false;
                keep(expires_at);
            }
        }
    }
    let due_ids: Vec<&str> = due.iter().map(|d| d.id.as_str()).collect();
    for a in &aside {
        let remaining = if due_ids.contains(&a.id.as_str()) {
            0
        } else {
            a.remaining
        };
        let needed = remaining > 0 || after(a, new_position.as_ref());
        if !needed {
            spent.aside_deletes.push(a.id.clone());
        } else if remaining != a.remaining {
            spent.aside_updates.push((a.id.clone(), remaining));
        }
    }
    spent.aside_inserts = holes;
    if new_position != position {
        spent.position = new_position;
    }
    due.sort_by(|a, b| (&a.expires_at, &a.id).cmp(&(&b.expires_at, &b.id)));
    Expired { due, spent, next }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn earn(date: u32, id: &str, amount: i64, expires_at: Option<u32>) -> Earn<u32> {
        Earn {
            date,
            id: id.into(),
            amount,
            expires_at,
        }
    }

    fn aside(date: u32, id: &str, remaining: i64, expires_at: Option<u32>) -> Aside<u32> {
        Aside {
            date,
            id: id.into(),
            remaining,
            expires_at,
        }
    }

    fn take(
        amount: i64,
        position: Option<Position<u32>>,
        aside: Vec<Aside<u32>>,
        main: &[Earn<u32>],
    ) -> (Spent<u32>, i64) {
        let mut taker = Taker::new(amount, position, aside);
        for e in main {
            if !taker.earn(e) {
                break;
            }
        }
        let left = taker.left();
        (taker.finish(), left)
    }

    #[test]
    fn a_spend_moves_the_position_through_the_oldest_earns() {
        let main = [
            earn(1, "a", 5, None),
            earn(2, "b", 5, None),
            earn(3, "c", 5, None),
        ];
        let (spent, left) = take(7, None, vec![], &main);
        assert_eq!(left, 0);
        assert_eq!(spent.takes, [("a".to_string(), 5), ("b".to_string(), 2)]);
        let at_b = Position {
            date: 2,
            id: "b".into(),
            taken: 2,
        };
        assert_eq!(spent.position, Some(at_b.clone()));
        // From there: b's other 3, then 2 of c.
        let (spent, _) = take(5, Some(at_b.clone()), vec![], &main[1..]);
        assert_eq!(
            spent.position.map(|p| (p.id, p.taken)),
            Some(("c".into(), 2))
        );
        // Short of tokens: what no lot covered is reported.
        let (_, left) = take(20, Some(at_b), vec![], &main[1..]);
        assert_eq!(left, 12, "b's 3 and c's 5 of the 20");
    }

    #[test]
    fn a_backdated_earn_set_aside_is_spent_in_date_order() {
        // The position is at b (dated 5); an earn dated 2 came later and was set aside.
        let position = Some(Position {
            date: 5,
            id: "b".into(),
            taken: 1,
        });
        let main = [earn(5, "b", 4, None), earn(9, "c", 4, None)];
        let (spent, left) = take(6, position, vec![aside(2, "x", 4, None)], &main);
        assert_eq!(left, 0);
        assert_eq!(
            spent.takes,
            [("x".to_string(), 4), ("b".to_string(), 2)],
            "the older aside row first"
        );
        assert_eq!(
            spent.aside_deletes,
            ["x"],
            "spent whole and behind the position"
        );
        assert_eq!(
            spent.position.map(|p| (p.id, p.taken)),
            Some(("b".into(), 3))
        );
    }

    #[test]
    fn an_aside_row_overrides_its_earn_in_the_main_sequence() {
        // c (after the position) expired out of turn: its empty aside row marks it spent.
        let main = [
            earn(1, "a", 2, None),
            earn(3, "c", 9, None),
            earn(4, "d", 5, None),
        ];
        let (spent, left) = take(4, None, vec![aside(3, "c", 0, None)], &main);
        assert_eq!(left, 0);
        assert_eq!(
            spent.position.map(|p| (p.id, p.taken)),
            Some(("d".into(), 2))
        );
        assert_eq!(
            spent.aside_deletes,
            ["c"],
            "passed by the position, no longer needed"
        );
    }

    #[test]
    fn expiry_takes_the_due_head_and_sets_later_due_earns_aside() {
        // a and c are due at 10; b (between them) expires later.
        let main = [
            earn(1, "a", 3, Some(5)),
            earn(2, "b", 3, Some(20)),
            earn(3, "c", 3, Some(8)),
            earn(4, "d", 3, None),
        ];
        let expired = expire(&10, None, vec![], &main);
        let due: Vec<(&str, i64)> = expired
            .due
            .iter()
            .map(|d| (d.id.as_str(), d.remaining))
            .collect();
        assert_eq!(due, [("a", 3), ("c", 3)]);
        assert_eq!(
            expired.spent.position.map(|p| (p.id, p.taken)),
            Some(("a".into(), 3))
        );
        let holes: Vec<(&str, i64)> = expired
            .spent
            .aside_inserts
            .iter()
            .map(|a| (a.id.as_str(), a.remaining))
            .collect();
        assert_eq!(holes, [("c", 0)]);
        assert_eq!(expired.next, Some(20));
    }

    #[test]
    fn expiry_counts_the_part_left_at_the_position_and_aside() {
        let position = Some(Position {
            date: 1,
            id: "a".into(),
            taken: 2,
        });
        let main = [earn(1, "a", 3, Some(5)), earn(2, "b", 3, Some(30))];
        let expired = expire(&10, position, vec![aside(0, "x", 4, Some(6))], &main);
        let due: Vec<(&str, i64)> = expired
            .due
            .iter()
            .map(|d| (d.id.as_str(), d.remaining))
            .collect();
        assert_eq!(due, [("a", 1), ("x", 4)]);
        assert_eq!(expired.spent.aside_deletes, ["x"]);
        assert_eq!(expired.next, Some(30));
        // Nothing due: nothing changes.
        let expired = expire(&4, None, vec![], &main);
        assert!(expired.due.is_empty());
        assert_eq!(expired.spent, Spent::default());
        assert_eq!(expired.next, Some(5));
    }

    #[test]
    fn a_reversal_takes_its_own_earns_lot_first_wherever_it_lies() {
        let main = [
            earn(1, "a", 5, None),
            earn(2, "b", 5, None),
            earn(3, "c", 5, Some(9)),
        ];
        // `main` from the position on, as the callers read it.
        let first = |amount, position: Option<Position<u32>>, aside, e: &Earn<u32>| {
            let from = position
                .as_ref()
                .map_or(0, |p: &Position<u32>| p.date as usize - 1);
            let mut taker = Taker::new(amount, position, aside);
            taker.take_first(e);
            for m in &main[from..] {
                if !taker.earn(m) {
                    break;
                }
            }
            let left = taker.left();
            (taker.finish(), left)
        };
        // c is whole after the position: 3 of it, then nothing else; an aside row keeps its 2.
        let (spent, left) = first(3, None, vec![], &main[2]);
        assert_eq!((spent.takes.clone(), left), (vec![("c".to_string(), 3)], 0));
        assert_eq!(spent.aside_inserts, [aside(3, "c", 2, Some(9))]);
        assert_eq!(spent.position, None);
        // All of c and 2 more, oldest first: c's empty row stays (the position is before it).
        let (spent, _) = first(7, None, vec![], &main[2]);
        assert_eq!(spent.takes, [("c".to_string(), 5), ("a".to_string(), 2)]);
        assert_eq!(spent.aside_inserts, [aside(3, "c", 0, Some(9))]);
        assert_eq!(
            spent.position.map(|p| (p.id, p.taken)),
            Some(("a".into(), 2))
        );
        // b at the position: its other 4 first; a (before the position) has nothing left.
        let at_b = Some(Position {
            date: 2,
            id: "b".into(),
            taken: 1,
        });
        let (spent, left) = first(4, at_b.clone(), vec![], &main[0]);
        assert_eq!((spent.takes.clone(), left), (vec![("b".to_string(), 4)], 0));
        let (spent, _) = first(4, at_b.clone(), vec![], &main[1]);
        assert_eq!(spent.takes, [("b".to_string(), 4)]);
        assert_eq!(
            spent.position.map(|p| (p.id, p.taken)),
            Some(("b".into(), 5))
        );
        // An aside row is taken from where it is; past the wallet's lots the rest is left.
        let x = earn(0, "x", 4, None);
        let (spent, left) = first(20, at_b, vec![aside(0, "x", 3, None)], &x);
        assert_eq!(spent.takes[0], ("x".to_string(), 3));
        assert_eq!(left, 20 - 3 - 4 - 5);
        assert_eq!(spent.aside_deletes, ["x"]);
    }

    #[test]
    fn a_reversal_its_own_lot_covers_needs_no_other_aside_row() {
        let position = Some(Position {
            date: 2,
            id: "b".into(),
            taken: 1,
        });
        let others = [aside(0, "x", 3, None), aside(7, "y", 0, None)];
        let c = earn(5, "c", 5, Some(9));
        let d = earn(8, "d", 5, None);
        let cases = [
            (c.clone(), None),
            (c.clone(), Some(aside(5, "c", 4, Some(9)))),
            (earn(2, "b", 5, None), None),
            (d.clone(), None),
        ];
        for (first, own) in cases {
            let mut all: Vec<Aside<u32>> = others.to_vec();
            all.extend(own.clone());
            all.sort_by_key(|a| a.date);
            let with_all = {
                let mut taker = Taker::new(2, position.clone(), all);
                taker.take_first(&first);
                assert_eq!(taker.left(), 0);
                taker.finish()
            };
            let mut taker = Taker::new(2, position.clone(), own.into_iter().collect());
            taker.take_first(&first);
            assert_eq!(taker.left(), 0);
            assert_eq!(taker.finish(), with_all, "{}", first.id);
        }
    }

    #[test]
    fn tokens_given_back_land_where_they_were_taken() {
        let a = earn(1, "a", 5, Some(50));
        let b = earn(2, "b", 5, Some(60));
        let x = earn(0, "x", 4, Some(40));
        let at_b = Some(Position {
            date: 2,
            id: "b".into(),
            taken: 3,
        });
        // a is spent (before the position): an aside row; b is the position: less taken; x is
        // aside: more remaining.
        let gifts = [
            (a.clone(), 2),
            (b.clone(), 3),
            (x.clone(), 1),
            (a.clone(), 1),
        ];
        let spent = give_back(at_b.clone(), &[aside(0, "x", 0, Some(40))], &gifts).unwrap();
        assert_eq!(spent.aside_inserts, [aside(1, "a", 3, Some(50))]);
        assert_eq!(spent.aside_updates, [("x".to_string(), 1)]);
        assert_eq!(
            spent.position.map(|p| (p.id, p.taken)),
            Some(("b".into(), 0))
        );
        // Nothing was taken from an earn whole after the position.
        let c = earn(3, "c", 5, None);
        assert!(give_back(at_b, &[], &[(c, 1)]).is_err());
    }
}
