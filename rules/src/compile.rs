//! From CEL source to the typed tree in `nodes`: parameters become fields and slots, every
//! operator and function is checked against the types it gets, and each mistake is recorded
//! with its position so a rule set reports all of them at once.

use cel::common::ast::{CallExpr, Expr, IdedExpr, LiteralValue, SelectExpr};
use cel::parser::Parser;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rust_decimal::Decimal;

use crate::error::ErrorKind;
use crate::nodes::{Bool, CmpOp, Num, NumOp, Part, Str, TextTest, Time, Zone};

/// The parameters a rule may read, for error messages.
pub(crate) const PARAMETERS: &str = "amount, date, id, currency, description, meta.<key>, \
     wallet.tier, wallet.balance, member.status; in rules with on = \"activity\": activity.type, \
     activity.attributes.<key>";

const FUNCTIONS: &str = "size, int, double, string, timestamp, weekday, hour, minute, month, \
     day, year, has, math.least, math.greatest; methods contains, startsWith, endsWith, size, \
     getDayOfWeek, getHours, getMinutes, getMonth, getDate, getDayOfMonth, getDayOfYear, getFullYear";

/// A typed expression.
pub(crate) enum Typed {
    Num(Num),
    Str(Str),
    Bool(Bool),
    Time(Time),
    /// A meta value, whose type is known only per transaction.
    Meta(u16),
}

impl Typed {
    fn name(&self) -> &'static str {
        match self {
            Typed::Num(_) => "a number",
            Typed::Str(_) => "text",
            Typed::Bool(_) => "true/false",
            Typed::Time(_) => "a date-time",
            Typed::Meta(_) => "a meta value",
        }
    }
}

/// A problem found in one expression: kind, position in the expression (1-based line and
/// column) and message.
pub(crate) type ExprError = (ErrorKind, Option<(usize, usize)>, String);

/// Marks an expression whose error is already recorded.
pub(crate) struct Reported;

type Res<T> = Result<T, Reported>;

/// Compiles the expressions of one rule set; meta slots are shared by all of them.
pub(crate) struct Compiler<'s> {
    /// The meta paths seen so far; a path's index is its slot.
    pub meta_paths: &'s mut Vec<Vec<String>>,
    pub zone: Tz,
    /// Set when an expression reads `date` in the programme's zone.
    pub uses_local: bool,
    /// The expressions are a rule's with `on = "activity"`: they read `activity.*`, not
    /// `amount` or `meta.*`.
    pub activity: bool,
    source: String,
    offsets: Option<cel::common::ast::SourceInfo>,
    pub errors: Vec<ExprError>,
}

impl<'s> Compiler<'s> {
    pub fn new(meta_paths: &'s mut Vec<Vec<String>>, zone: Tz) -> Self {
        Compiler {
            meta_paths,
            zone,
            uses_local: false,
            activity: false,
            source: String::new(),
            offsets: None,
            errors: Vec::new(),
        }
    }

    /// Parses `source` and compiles it; on failure the problems are in `self.errors`.
    pub fn expression(&mut self, source: &str) -> Res<Typed> {
        self.source = source.to_string();
        self.offsets = None;
        match Parser::new().parse_with_source_info(source) {
            Ok((expr, info)) => {
                self.offsets = Some(info);
                self.compile(&expr)
            }
            Err(parse) => {
                for error in parse.errors {
                    // cel reports 1-based lines and columns (0 when it has no place).
                    let position = (error.pos.0 > 0)
                        .then(|| (error.pos.0 as usize, error.pos.1.max(1) as usize));
                    self.errors.push((ErrorKind::Syntax, position, error.msg));
                }
                Err(Reported)
            }
        }
    }

    fn fail<T>(&mut self, at: &IdedExpr, kind: ErrorKind, message: impl Into<String>) -> Res<T> {
        let position = self
            .offsets
            .as_ref()
            .and_then(|info| info.offset_for(at.id))
            .map(|(start, _)| line_column(&self.source, start as usize));
        self.errors.push((kind, position, message.into()));
        Err(Reported)
    }

    /// The slot of a meta path (written whole: `meta.a` or `activity.attributes.a`).
    fn slot(&mut self, path: &[&str]) -> u16 {
        let path: Vec<String> = path.iter().map(std::string::ToString::to_string).collect();
        if let Some(i) = self.meta_paths.iter().position(|p| *p == path) {
            return i as u16;
        }
        self.meta_paths.push(path);
        (self.meta_paths.len() - 1) as u16
    }

    pub fn compile(&mut self, e: &IdedExpr) -> Res<Typed> {
        match &e.expr {
            Expr::Literal(literal) => self.literal(e, literal),
            Expr::Ident(name) => self.parameter(e, &[name.as_str()]),
            Expr::Select(select) => self.select(e, select),
            Expr::Call(call) => self.call(e, call),
            Expr::List(_) => self.fail(e, ErrorKind::TypeMismatch, "a list is only allowed after `in`"),
            Expr::Map(_) | Expr::Struct(_) => {
                self.fail(e, ErrorKind::TypeMismatch, "maps and messages are not values a rule can use")
            }
            Expr::Comprehension(_) => self.fail(
                e,
                ErrorKind::UnknownFunction,
                format!("the macros all, exists, map and filter are not supported; available: {FUNCTIONS}"),
            ),
            Expr::Unspecified => self.fail(e, ErrorKind::Syntax, "empty expression"),
        }
    }

    fn literal(&mut self, e: &IdedExpr, literal: &LiteralValue) -> Res<Typed> {
        Ok(match literal {
            LiteralValue::Boolean(b) => Typed::Bool(Bool::Lit(*b.inner())),
            LiteralValue::Int(i) => Typed::Num(Num::Lit(Decimal::from(*i.inner()))),
            LiteralValue::UInt(u) => Typed::Num(Num::Lit(Decimal::from(*u.inner()))),
            LiteralValue::Double(d) => match d.inner().to_string().parse::<Decimal>() {
                Ok(value) => Typed::Num(Num::Lit(value)),
                Err(_) => return self.fail(e, ErrorKind::TypeMismatch, "number out of range"),
            },
            LiteralValue::String(s) => Typed::Str(Str::Lit(s.inner().to_string())),
            LiteralValue::Null => {
                return self.fail(
                    e,
                    ErrorKind::TypeMismatch,
                    "null is not supported; test for a meta key with has(meta.key)",
                );
            }
            LiteralValue::Bytes(_) => {
                return self.fail(e, ErrorKind::TypeMismatch, "bytes are not supported");
            }
        })
    }

    /// A parameter by its dotted path (`amount`, `wallet.tier`, `meta.store.code`).
    fn parameter(&mut self, e: &IdedExpr, path: &[&str]) -> Res<Typed> {
        Ok(match path {
            ["amount"] if !self.activity => Typed::Num(Num::Amount),
            ["date"] => Typed::Time(Time::Date),
            ["id"] => Typed::Str(Str::Id),
            ["currency"] => Typed::Str(Str::Currency),
            ["description"] => Typed::Str(Str::Description),
            ["wallet", "tier"] => Typed::Str(Str::Tier),
            ["wallet", "balance"] => Typed::Num(Num::Balance),
            ["member", "status"] => Typed::Str(Str::MemberStatus),
            _ if self.meta_path(path) => Typed::Meta(self.slot(path)),
            ["activity", "type"] if self.activity => Typed::Str(Str::Activity),
            ["amount" | "meta" | "activity", ..] => {
                let message = self.misplaced(path);
                return self.fail(e, ErrorKind::UnknownParameter, message);
            }
            _ => {
                return self.fail(
                    e,
                    ErrorKind::UnknownParameter,
                    format!(
                        "unknown parameter `{}`; known: {PARAMETERS}",
                        path.join(".")
                    ),
                );
            }
        })
    }

    /// Whether `path` names a value these expressions read by key: `meta.<key>` in a
    /// transaction's rule, `activity.attributes.<key>` in an activity's.
    fn meta_path(&self, path: &[&str]) -> bool {
        match path {
            ["meta", rest @ ..] => !self.activity && !rest.is_empty(),
            ["activity", "attributes", rest @ ..] => self.activity && !rest.is_empty(),
            _ => false,
        }
    }

    /// Why a transaction's parameter is not an activity's, or the other way round.
    fn misplaced(&self, path: &[&str]) -> String {
        let name = path.join(".");
        if self.activity {
            format!(
                "`{name}` is not read by a rule with on = \"activity\": an activity has a type \
                 (activity.type) and attributes (activity.attributes.<key>), no amount or meta"
            )
        } else if path.len() > 1 && path[0] == "activity" {
            format!("`{name}` is read only by rules with on = \"activity\"")
        } else {
            format!("unknown parameter `{name}`; known: {PARAMETERS}")
        }
    }

    /// The dotted path of `a.b.c` or `meta['key with spaces']`, if `e` is one.
    fn path_of(e: &IdedExpr) -> Option<Vec<&str>> {
        match &e.expr {
            Expr::Ident(name) => Some(vec![name.as_str()]),
            Expr::Select(SelectExpr {
                operand,
                field,
                test: false,
            }) => {
                let mut path = Self::path_of(operand)?;
                path.push(field);
                Some(path)
            }
            Expr::Call(CallExpr {
                func_name,
                target: None,
                args,
            }) if func_name == "_[_]" => {
                let mut path = Self::path_of(&args[0])?;
                match &args[1].expr {
                    Expr::Literal(LiteralValue::String(key)) => path.push(key.inner()),
                    _ => return None,
                }
                Some(path)
            }
            _ => None,
        }
    }

    fn select(&mut self, e: &IdedExpr, select: &SelectExpr) -> Res<Typed> {
        if select.test {
            // has(meta.a.b)
            let inner = IdedExpr {
                id: e.id,
                expr: Expr::Select(SelectExpr {
                    operand: select.operand.clone(),
                    field: select.field.clone(),
                    test: false,
                }),
            };
            return match Self::path_of(&inner).as_deref() {
                Some(path) if self.meta_path(path) => Ok(Typed::Bool(Bool::Has(self.slot(path)))),
                _ if self.activity => self.fail(
                    e,
                    ErrorKind::TypeMismatch,
                    "has() tests an attribute: has(activity.attributes.key)",
                ),
                _ => self.fail(
                    e,
                    ErrorKind::TypeMismatch,
                    "has() tests a meta key: has(meta.key)",
                ),
            };
        }
        match Self::path_of(e) {
            Some(path) => self.parameter(e, &path),
            None => self.fail(
                e,
                ErrorKind::UnknownParameter,
                format!("unknown parameter; known: {PARAMETERS}"),
            ),
        }
    }

    fn call(&mut self, e: &IdedExpr, call: &CallExpr) -> Res<Typed> {
        let name = call.func_name.as_str();
        if let Some(target) = &call.target {
            return self.method(e, name, target, &call.args);
        }
        let args = &call.args;
        match name {
            "_[_]" => match Self::path_of(e) {
                Some(path) => self.parameter(e, &path),
                None => self.fail(
                    e,
                    ErrorKind::TypeMismatch,
                    "only meta['key'] may be indexed, with a text key",
                ),
            },
            "_&&_" | "_||_" => {
                let a = self
                    .compile(&args[0])
                    .and_then(|a| self.boolean(&args[0], a));
                let b = self
                    .compile(&args[1])
                    .and_then(|b| self.boolean(&args[1], b));
                let (a, b) = (Box::new(a?), Box::new(b?));
                Ok(Typed::Bool(if name == "_&&_" {
                    Bool::And(a, b)
                } else {
                    Bool::Or(a, b)
                }))
            }
            "!_" => {
                let a = self.compile(&args[0])?;
                Ok(Typed::Bool(Bool::Not(Box::new(self.boolean(&args[0], a)?))))
            }
            "-_" => {
                let a = self.compile(&args[0])?;
                Ok(Typed::Num(Num::Neg(Box::new(self.number(&args[0], a)?))))
            }
            "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => self.arithmetic(e, name, args),
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => self.comparison(e, name, args),
            "_?_:_" => self.conditional(e, args),
            "@in" => self.membership(e, args),
            "size" if args.len() == 1 => {
                let a = self.compile(&args[0])?;
                Ok(Typed::Num(Num::Size(Box::new(self.text(&args[0], a)?))))
            }
            "int" | "double" | "decimal" if args.len() == 1 => match self.compile(&args[0])? {
                Typed::Num(n) => Ok(Typed::Num(n)),
                Typed::Meta(slot) => Ok(Typed::Num(Num::MetaLoose(slot))),
                Typed::Str(s) => Ok(Typed::Num(Num::Parse(Box::new(s)))),
                other => self.fail(
                    &args[0],
                    ErrorKind::TypeMismatch,
                    format!("{name}() needs a number or text, not {}", other.name()),
                ),
            },
            "string" if args.len() == 1 => match self.compile(&args[0])? {
                Typed::Str(s) => Ok(Typed::Str(s)),
                Typed::Meta(slot) => Ok(Typed::Str(Str::MetaLoose(slot))),
                Typed::Num(n) => Ok(Typed::Str(Str::FromNum(Box::new(n)))),
                other => self.fail(
                    &args[0],
                    ErrorKind::TypeMismatch,
                    format!("string() needs a number or text, not {}", other.name()),
                ),
            },
            "timestamp" if args.len() == 1 => match &args[0].expr {
                Expr::Literal(LiteralValue::String(text)) => {
                    match DateTime::parse_from_rfc3339(text.inner()) {
                        Ok(t) => Ok(Typed::Time(Time::Lit(t.with_timezone(&Utc)))),
                        Err(err) => self.fail(
                            &args[0],
                            ErrorKind::TypeMismatch,
                            format!("not an RFC 3339 date-time: {err}"),
                        ),
                    }
                }
                _ => self.fail(
                    e,
                    ErrorKind::TypeMismatch,
                    "timestamp() takes a text literal such as '2026-12-24T00:00:00Z'",
                ),
            },
            "weekday" | "hour" | "minute" | "month" | "day" | "year" if args.len() == 1 => {
                let part = match name {
                    "weekday" => Part::Weekday,
                    "hour" => Part::Hour,
                    "minute" => Part::Minute,
                    "month" => Part::Month,
                    "day" => Part::Day,
                    _ => Part::Year,
                };
                let t = self.compile(&args[0])?;
                let t = self.time(&args[0], t)?;
                self.uses_local |= t == Time::Date;
                Ok(Typed::Num(Num::Part(
                    part,
                    Zone::Programme(self.zone),
                    Box::new(t),
                )))
            }
            _ => self.fail(
                e,
                ErrorKind::UnknownFunction,
                format!(
                    "unknown function `{}` with {} argument(s); available: {FUNCTIONS}",
                    name,
                    args.len()
                ),
            ),
        }
    }

    fn method(
        &mut self,
        e: &IdedExpr,
        name: &str,
        target: &IdedExpr,
        args: &[IdedExpr],
    ) -> Res<Typed> {
        if matches!(&target.expr, Expr::Ident(ns) if ns == "math")
            && matches!(name, "least" | "greatest")
        {
            if args.len() < 2 {
                return self.fail(
                    e,
                    ErrorKind::UnknownFunction,
                    format!("math.{name} needs at least two numbers"),
                );
            }
            let op = if name == "least" {
                NumOp::Least
            } else {
                NumOp::Greatest
            };
            let mut numbers = Vec::new();
            for arg in args {
                let n = self.compile(arg).and_then(|a| self.number(arg, a));
                numbers.push(n);
            }
            let mut numbers = numbers.into_iter().collect::<Res<Vec<_>>>()?.into_iter();
            let first = numbers.next().expect("at least two arguments");
            return Ok(Typed::Num(
                numbers.fold(first, |acc, n| Num::Bin(op, Box::new(acc), Box::new(n))),
            ));
        }
        let subject = self.compile(target)?;
        match name {
            "contains" | "startsWith" | "endsWith" if args.len() == 1 => {
                let test = match name {
                    "contains" => TextTest::Contains,
                    "startsWith" => TextTest::StartsWith,
                    _ => TextTest::EndsWith,
                };
                let a = self.text(target, subject)?;
                let b = self.compile(&args[0])?;
                let b = self.text(&args[0], b)?;
                Ok(Typed::Bool(Bool::Text(test, Box::new(a), Box::new(b))))
            }
            "size" if args.is_empty() => {
                Ok(Typed::Num(Num::Size(Box::new(self.text(target, subject)?))))
            }
            "getDayOfWeek" | "getHours" | "getMinutes" | "getMonth" | "getDate"
            | "getDayOfMonth" | "getDayOfYear" | "getFullYear"
                if args.len() <= 1 =>
            {
                let part = match name {
                    "getDayOfWeek" => Part::CelDayOfWeek,
                    "getHours" => Part::Hour,
                    "getMinutes" => Part::Minute,
                    "getMonth" => Part::CelMonth,
                    "getDate" => Part::Day,
                    "getDayOfMonth" => Part::CelDayOfMonth,
                    "getDayOfYear" => Part::CelDayOfYear,
                    _ => Part::Year,
                };
                let t = self.time(target, subject)?;
                // As in CEL: UTC unless a zone is given.
                let zone = match args.first().map(|a| &a.expr) {
                    None => Zone::Utc,
                    Some(Expr::Literal(LiteralValue::String(zone))) => {
                        match zone.inner().parse::<Tz>() {
                            Ok(tz) => Zone::Named(tz),
                            Err(_) => {
                                return self.fail(
                                    &args[0],
                                    ErrorKind::InvalidWindow,
                                    format!("unknown time zone `{}`", zone.inner()),
                                );
                            }
                        }
                    }
                    Some(_) => {
                        return self.fail(
                            &args[0],
                            ErrorKind::TypeMismatch,
                            "the time zone must be a text literal such as 'Europe/Paris'",
                        );
                    }
                };
                Ok(Typed::Num(Num::Part(part, zone, Box::new(t))))
            }
            _ => self.fail(
                e,
                ErrorKind::UnknownFunction,
                format!(
                    "unknown method `{name}` with {} argument(s); available: {FUNCTIONS}",
                    args.len()
                ),
            ),
        }
    }

    fn arithmetic(&mut self, e: &IdedExpr, name: &str, args: &[IdedExpr]) -> Res<Typed> {
        let a = self.compile(&args[0]);
        let b = self.compile(&args[1]);
        let (a, b) = (a?, b?);
        if name == "_+_" && (matches!(a, Typed::Str(_)) || matches!(b, Typed::Str(_))) {
            let a = self.text(&args[0], a)?;
            let b = self.text(&args[1], b)?;
            return Ok(Typed::Str(Str::Concat(Box::new(a), Box::new(b))));
        }
        let op = match name {
            "_+_" => NumOp::Add,
            "_-_" => NumOp::Sub,
            "_*_" => NumOp::Mul,
            "_/_" => NumOp::Div,
            _ => NumOp::Rem,
        };
        let a = self.number(&args[0], a);
        let b = self.number(&args[1], b);
        let _ = e;
        Ok(Typed::Num(Num::Bin(op, Box::new(a?), Box::new(b?))))
    }

    fn comparison(&mut self, e: &IdedExpr, name: &str, args: &[IdedExpr]) -> Res<Typed> {
        let op = match name {
            "_==_" => CmpOp::Eq,
            "_!=_" => CmpOp::Ne,
            "_<_" => CmpOp::Lt,
            "_<=_" => CmpOp::Le,
            "_>_" => CmpOp::Gt,
            _ => CmpOp::Ge,
        };
        let a = self.compile(&args[0]);
        let b = self.compile(&args[1]);
        let (a, b) = (a?, b?);
        let equality = matches!(op, CmpOp::Eq | CmpOp::Ne);
        Ok(Typed::Bool(match (a, b) {
            (Typed::Num(a), b @ (Typed::Num(_) | Typed::Meta(_))) => {
                Bool::Num(op, Box::new(a), Box::new(self.number(&args[1], b)?))
            }
            (a @ Typed::Meta(_), Typed::Num(b)) => {
                Bool::Num(op, Box::new(self.number(&args[0], a)?), Box::new(b))
            }
            (Typed::Str(a), b @ (Typed::Str(_) | Typed::Meta(_))) => {
                Bool::Str(op, Box::new(a), Box::new(self.text(&args[1], b)?))
            }
            (a @ Typed::Meta(_), Typed::Str(b)) => {
                Bool::Str(op, Box::new(self.text(&args[0], a)?), Box::new(b))
            }
            (Typed::Time(a), Typed::Time(b)) => Bool::Time(op, Box::new(a), Box::new(b)),
            (Typed::Bool(a), b @ (Typed::Bool(_) | Typed::Meta(_))) if equality => Bool::Bools(
                op == CmpOp::Eq,
                Box::new(a),
                Box::new(self.boolean(&args[1], b)?),
            ),
            (a @ Typed::Meta(_), Typed::Bool(b)) if equality => Bool::Bools(
                op == CmpOp::Eq,
                Box::new(self.boolean(&args[0], a)?),
                Box::new(b),
            ),
            (Typed::Meta(a), Typed::Meta(b)) if equality => Bool::MetaEq(op == CmpOp::Eq, a, b),
            (Typed::Meta(a), Typed::Meta(b)) => {
                Bool::Num(op, Box::new(Num::Meta(a)), Box::new(Num::Meta(b)))
            }
            (a, b) => {
                let verb = if equality { "compare" } else { "order" };
                return self.fail(
                    e,
                    ErrorKind::TypeMismatch,
                    format!("cannot {verb} {} with {}", a.name(), b.name()),
                );
            }
        }))
    }

    fn conditional(&mut self, e: &IdedExpr, args: &[IdedExpr]) -> Res<Typed> {
        let c = self
            .compile(&args[0])
            .and_then(|c| self.boolean(&args[0], c));
        let a = self.compile(&args[1]);
        let b = self.compile(&args[2]);
        let (c, a, b) = (Box::new(c?), a?, b?);
        Ok(match (a, b) {
            (a @ (Typed::Num(_) | Typed::Meta(_)), b @ Typed::Num(_))
            | (a @ Typed::Num(_), b @ Typed::Meta(_)) => Typed::Num(Num::If(
                c,
                Box::new(self.number(&args[1], a)?),
                Box::new(self.number(&args[2], b)?),
            )),
            (a @ (Typed::Str(_) | Typed::Meta(_)), b @ Typed::Str(_))
            | (a @ Typed::Str(_), b @ Typed::Meta(_)) => Typed::Str(Str::If(
                c,
                Box::new(self.text(&args[1], a)?),
                Box::new(self.text(&args[2], b)?),
            )),
            (a @ (Typed::Bool(_) | Typed::Meta(_)), b @ Typed::Bool(_))
            | (a @ Typed::Bool(_), b @ Typed::Meta(_)) => Typed::Bool(Bool::If(
                c,
                Box::new(self.boolean(&args[1], a)?),
                Box::new(self.boolean(&args[2], b)?),
            )),
            (Typed::Meta(a), Typed::Meta(b)) => {
                Typed::Num(Num::If(c, Box::new(Num::Meta(a)), Box::new(Num::Meta(b))))
            }
            (a, b) => {
                return self.fail(
                    e,
                    ErrorKind::TypeMismatch,
                    format!("the branches give {} and {}", a.name(), b.name()),
                );
            }
        })
    }

    fn membership(&mut self, e: &IdedExpr, args: &[IdedExpr]) -> Res<Typed> {
        let Expr::List(list) = &args[1].expr else {
            return self.fail(
                &args[1],
                ErrorKind::TypeMismatch,
                "`in` needs a list of literal values, e.g. x in ['a', 'b']",
            );
        };
        let needle = self.compile(&args[0])?;
        let mut numbers = Vec::new();
        let mut texts = Vec::new();
        for item in &list.elements {
            match &item.expr {
                Expr::Literal(LiteralValue::String(s)) => texts.push(s.inner().to_string()),
                Expr::Literal(_) => match self.literal(
                    item,
                    match &item.expr {
                        Expr::Literal(l) => l,
                        _ => unreachable!("matched a literal"),
                    },
                )? {
                    Typed::Num(Num::Lit(n)) => numbers.push(n),
                    _ => {
                        return self.fail(
                            item,
                            ErrorKind::TypeMismatch,
                            "list items must be numbers or text",
                        );
                    }
                },
                _ => {
                    return self.fail(
                        item,
                        ErrorKind::TypeMismatch,
                        "list items must be literal numbers or text",
                    );
                }
            }
        }
        if !numbers.is_empty() && !texts.is_empty() {
            return self.fail(
                &args[1],
                ErrorKind::TypeMismatch,
                "a list mixes numbers and text",
            );
        }
        let _ = e;
        Ok(Typed::Bool(if texts.is_empty() {
            Bool::InNum(Box::new(self.number(&args[0], needle)?), numbers)
        } else {
            Bool::InStr(Box::new(self.text(&args[0], needle)?), texts)
        }))
    }

    pub fn number(&mut self, at: &IdedExpr, t: Typed) -> Res<Num> {
        match t {
            Typed::Num(n) => Ok(n),
            Typed::Meta(slot) => Ok(Num::Meta(slot)),
            other => self.fail(
                at,
                ErrorKind::TypeMismatch,
                format!("expected a number, found {}", other.name()),
            ),
        }
    }

    pub fn text(&mut self, at: &IdedExpr, t: Typed) -> Res<Str> {
        match t {
            Typed::Str(s) => Ok(s),
            Typed::Meta(slot) => Ok(Str::Meta(slot)),
            other => self.fail(
                at,
                ErrorKind::TypeMismatch,
                format!("expected text, found {}", other.name()),
            ),
        }
    }

    pub fn boolean(&mut self, at: &IdedExpr, t: Typed) -> Res<Bool> {
        match t {
            Typed::Bool(b) => Ok(b),
            Typed::Meta(slot) => Ok(Bool::Meta(slot)),
            other => self.fail(
                at,
                ErrorKind::TypeMismatch,
                format!("expected true/false, found {}", other.name()),
            ),
        }
    }

    fn time(&mut self, at: &IdedExpr, t: Typed) -> Res<Time> {
        match t {
            Typed::Time(t) => Ok(t),
            other => self.fail(
                at,
                ErrorKind::TypeMismatch,
                format!("expected a date-time, found {}", other.name()),
            ),
        }
    }
}

/// 1-based line and column (in characters) of byte `offset` in `source`.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
