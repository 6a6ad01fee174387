//! The compiled form of an expression: a tree typed at compile time, with parameters resolved
//! to fields and meta keys to slots, so evaluation is a walk with no name lookups, no type tests
//! on the typed paths and no allocation for numbers, booleans and borrowed text.

use std::borrow::Cow;
use std::cmp::Ordering;

use chrono::{DateTime, Datelike, NaiveDateTime, Timelike, Utc};
use chrono_tz::Tz;
use rust_decimal::Decimal;

use crate::facts::{Facts, MetaVal};

/// Why an expression has no value for this transaction. A condition that meets one is false; an
/// effect that meets one does not apply. Either way the trace says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// A `meta` key (by slot) the transaction does not have.
    MissingMeta(u16),
    /// A `meta` key whose value is not of the type the expression needs.
    WrongType(u16, &'static str),
    DivisionByZero,
    /// A number beyond the 28 significant digits exact arithmetic keeps.
    Overflow,
    /// Text that `double()`/`int()` could not read as a number.
    NotANumber,
}

pub(crate) type Out<T> = Result<T, Skip>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    fn test(self, ord: Ordering) -> bool {
        match self {
            CmpOp::Eq => ord == Ordering::Equal,
            CmpOp::Ne => ord != Ordering::Equal,
            CmpOp::Lt => ord == Ordering::Less,
            CmpOp::Le => ord != Ordering::Greater,
            CmpOp::Gt => ord == Ordering::Greater,
            CmpOp::Ge => ord != Ordering::Less,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Least,
    Greatest,
}

/// A part of a date-time. The first group are this engine's helpers (`weekday(date)`: ISO, Monday
/// 1 to Sunday 7; `month(date)`: 1 to 12...); the second are CEL's timestamp methods, which
/// count from 0 (`getMonth()`: January is 0; `getDayOfWeek()`: Sunday is 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Weekday,
    Hour,
    Minute,
    Month,
    Day,
    Year,
    CelDayOfWeek,
    CelMonth,
    CelDayOfMonth,
    CelDayOfYear,
}

impl Part {
    fn of(self, t: NaiveDateTime) -> i64 {
        let v = match self {
            Part::Weekday => t.weekday().number_from_monday(),
            Part::Hour => t.hour(),
            Part::Minute => t.minute(),
            Part::Month => t.month(),
            Part::Day => t.day(),
            Part::Year => return i64::from(t.year()),
            Part::CelDayOfWeek => t.weekday().num_days_from_sunday(),
            Part::CelMonth => t.month0(),
            Part::CelDayOfMonth => t.day0(),
            Part::CelDayOfYear => t.ordinal0(),
        };
        i64::from(v)
    }
}

/// The zone a date part is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Zone {
    /// The programme's zone (precomputed per transaction for `date`).
    Programme(Tz),
    Utc,
    Named(Tz),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Time {
    Date,
    Lit(DateTime<Utc>),
}

impl Time {
    fn eval(&self, f: &Facts) -> DateTime<Utc> {
        match self {
            Time::Date => f.row.date,
            Time::Lit(t) => *t,
        }
    }

    fn local(&self, zone: Zone, f: &Facts) -> NaiveDateTime {
        match (self, zone) {
            (Time::Date, Zone::Programme(_)) => f.local,
            (t, Zone::Programme(tz) | Zone::Named(tz)) => {
                t.eval(f).with_timezone(&tz).naive_local()
            }
            (t, Zone::Utc) => t.eval(f).naive_utc(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Num {
    Lit(Decimal),
    Amount,
    Balance,
    Meta(u16),
    /// A meta value that may also be text holding a number (`double(meta.x)`).
    MetaLoose(u16),
    Neg(Box<Num>),
    Bin(NumOp, Box<Num>, Box<Num>),
    If(Box<Bool>, Box<Num>, Box<Num>),
    Part(Part, Zone, Box<Time>),
    Size(Box<Str>),
    Parse(Box<Str>),
}

impl Num {
    pub(crate) fn eval(&self, f: &Facts) -> Out<Decimal> {
        match self {
            Num::Lit(d) => Ok(*d),
            Num::Amount => Ok(f.row.amount),
            Num::Balance => Ok(f.ctx.wallet_balance),
            Num::Meta(slot) => match f.meta[usize::from(*slot)] {
                MetaVal::Num(d) => Ok(d),
                MetaVal::Missing => Err(Skip::MissingMeta(*slot)),
                _ => Err(Skip::WrongType(*slot, "a number")),
            },
            Num::MetaLoose(slot) => match f.meta[usize::from(*slot)] {
                MetaVal::Num(d) => Ok(d),
                MetaVal::Str(s) => s.trim().parse().map_err(|_| Skip::NotANumber),
                MetaVal::Missing => Err(Skip::MissingMeta(*slot)),
                _ => Err(Skip::WrongType(*slot, "a number")),
            },
            Num::Neg(a) => Ok(-a.eval(f)?),
            Num::Bin(op, a, b) => {
                let (a, b) = (a.eval(f)?, b.eval(f)?);
                match op {
                    NumOp::Add => a.checked_add(b).ok_or(Skip::Overflow),
                    NumOp::Sub => a.checked_sub(b).ok_or(Skip::Overflow),
                    NumOp::Mul => a.checked_mul(b).ok_or(Skip::Overflow),
                    NumOp::Div | NumOp::Rem if b.is_zero() => Err(Skip::DivisionByZero),
                    NumOp::Div => a.checked_div(b).ok_or(Skip::Overflow),
                    NumOp::Rem => a.checked_rem(b).ok_or(Skip::Overflow),
                    NumOp::Least => Ok(a.min(b)),
                    NumOp::Greatest => Ok(a.max(b)),
                }
            }
            Num::If(c, a, b) => {
                if c.eval(f)? {
                    a.eval(f)
                } else {
                    b.eval(f)
                }
            }
            Num::Part(part, zone, t) => Ok(Decimal::from(part.of(t.local(*zone, f)))),
            Num::Size(s) => Ok(Decimal::from(s.eval(f)?.chars().count())),
            Num::Parse(s) => s.eval(f)?.trim().parse().map_err(|_| Skip::NotANumber),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Str {
    Lit(String),
    Id,
    Currency,
    Description,
    Tier,
    MemberStatus,
    /// An activity's type (only in rules with `on = "activity"`).
    Activity,
    Meta(u16),
    /// A meta value read as text, numbers included (`string(meta.x)`).
    MetaLoose(u16),
    Concat(Box<Str>, Box<Str>),
    If(Box<Bool>, Box<Str>, Box<Str>),
    FromNum(Box<Num>),
}

impl Str {
    pub(crate) fn eval<'a>(&'a self, f: &'a Facts<'a>) -> Out<Cow<'a, str>> {
        Ok(match self {
            Str::Lit(s) => Cow::Borrowed(s.as_str()),
            Str::Id => Cow::Borrowed(f.row.id),
            Str::Currency => Cow::Borrowed(f.row.currency),
            Str::Description => Cow::Borrowed(f.row.description),
            Str::Activity => Cow::Borrowed(f.row.activity.unwrap_or("")),
            // A wallet without a tier has the empty tier: `wallet.tier == 'gold'` is plainly false.
            Str::Tier => Cow::Borrowed(f.ctx.wallet_tier.unwrap_or("")),
            Str::MemberStatus => Cow::Borrowed(f.ctx.member_status),
            Str::Meta(slot) => match f.meta[usize::from(*slot)] {
                MetaVal::Str(s) => Cow::Borrowed(s),
                MetaVal::Missing => return Err(Skip::MissingMeta(*slot)),
                _ => return Err(Skip::WrongType(*slot, "text")),
            },
            Str::MetaLoose(slot) => match f.meta[usize::from(*slot)] {
                MetaVal::Str(s) => Cow::Borrowed(s),
                MetaVal::Num(d) => Cow::Owned(d.normalize().to_string()),
                MetaVal::Bool(b) => Cow::Borrowed(if b { "true" } else { "false" }),
                MetaVal::Missing => return Err(Skip::MissingMeta(*slot)),
                _ => return Err(Skip::WrongType(*slot, "text")),
            },
            Str::Concat(a, b) => Cow::Owned(format!("{}{}", a.eval(f)?, b.eval(f)?)),
            Str::If(c, a, b) => {
                if c.eval(f)? {
                    a.eval(f)?
                } else {
                    b.eval(f)?
                }
            }
            Str::FromNum(n) => Cow::Owned(n.eval(f)?.normalize().to_string()),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextTest {
    Contains,
    StartsWith,
    EndsWith,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bool {
    Lit(bool),
    Meta(u16),
    Has(u16),
    Not(Box<Bool>),
    And(Box<Bool>, Box<Bool>),
    Or(Box<Bool>, Box<Bool>),
    If(Box<Bool>, Box<Bool>, Box<Bool>),
    Num(CmpOp, Box<Num>, Box<Num>),
    Str(CmpOp, Box<Str>, Box<Str>),
    Time(CmpOp, Box<Time>, Box<Time>),
    /// `==` (true) or `!=` (false) between booleans.
    Bools(bool, Box<Bool>, Box<Bool>),
    /// `==` (true) or `!=` (false) between two meta values of unknown type.
    MetaEq(bool, u16, u16),
    InNum(Box<Num>, Vec<Decimal>),
    InStr(Box<Str>, Vec<String>),
    Text(TextTest, Box<Str>, Box<Str>),
}

impl Bool {
    /// CEL's logic: `&&` is false if either side is false and `||` true if either side is true,
    /// even when the other side has no value; otherwise a missing value makes the whole missing.
    pub(crate) fn eval(&self, f: &Facts) -> Out<bool> {
        match self {
            Bool::Lit(b) => Ok(*b),
            Bool::Meta(slot) => match f.meta[usize::from(*slot)] {
                MetaVal::Bool(b) => Ok(b),
                MetaVal::Missing => Err(Skip::MissingMeta(*slot)),
                _ => Err(Skip::WrongType(*slot, "true or false")),
            },
            Bool::Has(slot) => Ok(f.meta[usize::from(*slot)] != MetaVal::Missing),
            Bool::Not(a) => Ok(!a.eval(f)?),
            Bool::And(a, b) => match a.eval(f) {
                Ok(false) => Ok(false),
                Ok(true) => b.eval(f),
                Err(skip) => match b.eval(f) {
                    Ok(false) => Ok(false),
                    _ => Err(skip),
                },
            },
            Bool::Or(a, b) => match a.eval(f) {
                Ok(true) => Ok(true),
                Ok(false) => b.eval(f),
                Err(skip) => match b.eval(f) {
                    Ok(true) => Ok(true),
                    _ => Err(skip),
                },
            },
            Bool::If(c, a, b) => {
                if c.eval(f)? {
                    a.eval(f)
                } else {
                    b.eval(f)
                }
            }
            Bool::Num(op, a, b) => Ok(op.test(a.eval(f)?.cmp(&b.eval(f)?))),
            Bool::Str(op, a, b) => Ok(op.test(a.eval(f)?.as_ref().cmp(b.eval(f)?.as_ref()))),
            Bool::Time(op, a, b) => Ok(op.test(a.eval(f).cmp(&b.eval(f)))),
            Bool::Bools(eq, a, b) => Ok((a.eval(f)? == b.eval(f)?) == *eq),
            Bool::MetaEq(eq, sa, sb) => {
                let (a, b) = (f.meta[usize::from(*sa)], f.meta[usize::from(*sb)]);
                if a == MetaVal::Missing {
                    return Err(Skip::MissingMeta(*sa));
                }
                if b == MetaVal::Missing {
                    return Err(Skip::MissingMeta(*sb));
                }
                Ok((a == b) == *eq)
            }
            Bool::InNum(a, list) => {
                let a = a.eval(f)?;
                Ok(list.contains(&a))
            }
            Bool::InStr(a, list) => {
                let a = a.eval(f)?;
                Ok(list.iter().any(|s| s == a.as_ref()))
            }
            Bool::Text(test, a, b) => {
                let (a, b) = (a.eval(f)?, b.eval(f)?);
                Ok(match test {
                    TextTest::Contains => a.contains(b.as_ref()),
                    TextTest::StartsWith => a.starts_with(b.as_ref()),
                    TextTest::EndsWith => a.ends_with(b.as_ref()),
                })
            }
        }
    }
}
