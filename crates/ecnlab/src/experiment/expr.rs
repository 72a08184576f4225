//! A tiny expression language for experiment checks and parameter templates:
//! `peak <= 2*h + tc + 2`, `max_n[mode='dequeue'] >= 1.5 * max_n[mode='enqueue'] and h > 0`.
//!
//! Identifiers resolve through a `Scope` (axis values, constants, metrics); `name[axis=value, …]` selects a
//! metric at other grid coordinates. Functions: min, max, abs.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Num(f64),
    Str(String),
    Bool(bool),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Value::Num(x) => write!(f, "{}", crate::observe::fmt_num((x * 1e6).round() / 1e6)),
            Value::Str(s) => write!(f, "{s}"),
            Value::Bool(b) => write!(f, "{b}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl Op {
    fn sym(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::And => "and",
            Op::Or => "or",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Lit(Value),
    /// A name with optional selectors `[axis = value, …]`.
    Name(String, Vec<(String, Value)>),
    Call(String, Vec<Expr>),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(Box<Expr>, Op, Box<Expr>),
}

/// Resolves names for evaluation.
pub trait Scope {
    fn lookup(&self, name: &str, selectors: &[(String, Value)]) -> Result<Value, String>;
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Sym(&'static str),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let mut out = vec![];
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch.is_ascii_digit() || (ch == '.' && c.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let st = i;
            while i < c.len() && (c[i].is_ascii_digit() || c[i] == '.' || c[i] == 'e') {
                i += 1;
            }
            let t: String = c[st..i].iter().collect();
            out.push(Tok::Num(t.parse().map_err(|_| format!("bad number `{t}`"))?));
        } else if ch.is_alphabetic() || ch == '_' {
            let st = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(c[st..i].iter().collect()));
        } else if ch == '\'' || ch == '"' {
            let st = i + 1;
            i += 1;
            while i < c.len() && c[i] != ch {
                i += 1;
            }
            if i >= c.len() {
                return Err("unterminated string".into());
            }
            out.push(Tok::Str(c[st..i].iter().collect()));
            i += 1;
        } else {
            let two: String = c[i..(i + 2).min(c.len())].iter().collect();
            let sym = ["<=", ">=", "==", "!="].into_iter().find(|s| *s == two);
            if let Some(s) = sym {
                out.push(Tok::Sym(s));
                i += 2;
            } else {
                let s = ["+", "-", "*", "/", "<", ">", "(", ")", "[", "]", ",", "="]
                    .into_iter()
                    .find(|s| s.starts_with(ch))
                    .ok_or_else(|| format!("unexpected `{ch}`"))?;
                out.push(Tok::Sym(s));
                i += 1;
            }
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn eat_sym(&mut self, s: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(x)) if *x == s) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn eat_word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Ident(x)) if x == w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, s: &str) -> Result<(), String> {
        if self.eat_sym(s) {
            Ok(())
        } else {
            Err(format!("expected `{s}` at token {}", self.pos))
        }
    }
    fn or(&mut self) -> Result<Expr, String> {
        let mut l = self.and()?;
        while self.eat_word("or") {
            l = Expr::Bin(Box::new(l), Op::Or, Box::new(self.and()?));
        }
        Ok(l)
    }
    fn and(&mut self) -> Result<Expr, String> {
        let mut l = self.not()?;
        while self.eat_word("and") {
            l = Expr::Bin(Box::new(l), Op::And, Box::new(self.not()?));
        }
        Ok(l)
    }
    fn not(&mut self) -> Result<Expr, String> {
        if self.eat_word("not") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.cmp()
    }
    fn cmp(&mut self) -> Result<Expr, String> {
        let l = self.sum()?;
        for (s, op) in [("<=", Op::Le), (">=", Op::Ge), ("==", Op::Eq), ("!=", Op::Ne), ("<", Op::Lt), (">", Op::Gt)] {
            if self.eat_sym(s) {
                return Ok(Expr::Bin(Box::new(l), op, Box::new(self.sum()?)));
            }
        }
        Ok(l)
    }
    fn sum(&mut self) -> Result<Expr, String> {
        let mut l = self.prod()?;
        loop {
            let op = if self.eat_sym("+") {
                Op::Add
            } else if self.eat_sym("-") {
                Op::Sub
            } else {
                return Ok(l);
            };
            l = Expr::Bin(Box::new(l), op, Box::new(self.prod()?));
        }
    }
    fn prod(&mut self) -> Result<Expr, String> {
        let mut l = self.unary()?;
        loop {
            let op = if self.eat_sym("*") {
                Op::Mul
            } else if self.eat_sym("/") {
                Op::Div
            } else {
                return Ok(l);
            };
            l = Expr::Bin(Box::new(l), op, Box::new(self.unary()?));
        }
    }
    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat_sym("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        self.atom()
    }
    fn literal(&mut self) -> Result<Value, String> {
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Num(x)) => {
                self.pos += 1;
                Ok(Value::Num(x))
            }
            Some(Tok::Str(s)) | Some(Tok::Ident(s)) => {
                self.pos += 1;
                Ok(Value::Str(s))
            }
            Some(Tok::Sym("-")) => {
                self.pos += 1;
                match self.literal()? {
                    Value::Num(x) => Ok(Value::Num(-x)),
                    v => Err(format!("cannot negate {v}")),
                }
            }
            t => Err(format!("expected a value, found {t:?}")),
        }
    }
    fn atom(&mut self) -> Result<Expr, String> {
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Num(x)) => {
                self.pos += 1;
                Ok(Expr::Lit(Value::Num(x)))
            }
            Some(Tok::Str(s)) => {
                self.pos += 1;
                Ok(Expr::Lit(Value::Str(s)))
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                if name == "true" || name == "false" {
                    return Ok(Expr::Lit(Value::Bool(name == "true")));
                }
                if self.eat_sym("(") {
                    let mut args = vec![];
                    if !self.eat_sym(")") {
                        loop {
                            args.push(self.or()?);
                            if self.eat_sym(")") {
                                break;
                            }
                            self.expect(",")?;
                        }
                    }
                    return Ok(Expr::Call(name, args));
                }
                let mut sel = vec![];
                if self.eat_sym("[") {
                    loop {
                        let Some(Tok::Ident(k)) = self.toks.get(self.pos).cloned() else {
                            return Err("expected an axis name in [ ]".into());
                        };
                        self.pos += 1;
                        self.expect("=")?;
                        sel.push((k, self.literal()?));
                        if self.eat_sym("]") {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                Ok(Expr::Name(name, sel))
            }
            _ if self.eat_sym("(") => {
                let e = self.or()?;
                self.expect(")")?;
                Ok(e)
            }
            t => Err(format!("unexpected {t:?}")),
        }
    }
}

pub fn parse(s: &str) -> Result<Expr, String> {
    let mut p = Parser { toks: lex(s)?, pos: 0 };
    let e = p.or()?;
    if p.pos != p.toks.len() {
        return Err(format!("trailing input after token {}", p.pos));
    }
    Ok(e)
}

fn num(v: Value) -> Result<f64, String> {
    match v {
        Value::Num(x) => Ok(x),
        v => Err(format!("`{v}` is not a number")),
    }
}
fn boolean(v: Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(b),
        v => Err(format!("`{v}` is not a boolean")),
    }
}

impl Expr {
    pub fn eval(&self, s: &dyn Scope) -> Result<Value, String> {
        Ok(match self {
            Expr::Lit(v) => v.clone(),
            Expr::Name(n, sel) => s.lookup(n, sel)?,
            Expr::Neg(e) => Value::Num(-num(e.eval(s)?)?),
            Expr::Not(e) => Value::Bool(!boolean(e.eval(s)?)?),
            Expr::Call(f, args) => {
                let xs: Vec<f64> = args.iter().map(|a| a.eval(s).and_then(num)).collect::<Result<_, _>>()?;
                match (f.as_str(), xs.as_slice()) {
                    ("abs", [x]) => Value::Num(x.abs()),
                    ("min", [_, ..]) => Value::Num(xs.iter().copied().fold(f64::INFINITY, f64::min)),
                    ("max", [_, ..]) => Value::Num(xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
                    _ => return Err(format!("unknown function {f}/{}", xs.len())),
                }
            }
            Expr::Bin(l, op, r) => match op {
                Op::And => Value::Bool(boolean(l.eval(s)?)? && boolean(r.eval(s)?)?),
                Op::Or => Value::Bool(boolean(l.eval(s)?)? || boolean(r.eval(s)?)?),
                Op::Eq | Op::Ne => {
                    let (a, b) = (l.eval(s)?, r.eval(s)?);
                    let eq = match (&a, &b) {
                        (Value::Num(x), Value::Num(y)) => (x - y).abs() < 1e-9,
                        _ => a.to_string() == b.to_string(),
                    };
                    Value::Bool(eq == (*op == Op::Eq))
                }
                _ => {
                    let (a, b) = (num(l.eval(s)?)?, num(r.eval(s)?)?);
                    match op {
                        Op::Add => Value::Num(a + b),
                        Op::Sub => Value::Num(a - b),
                        Op::Mul => Value::Num(a * b),
                        Op::Div => Value::Num(a / b),
                        Op::Lt => Value::Bool(a < b),
                        Op::Le => Value::Bool(a <= b),
                        Op::Gt => Value::Bool(a > b),
                        Op::Ge => Value::Bool(a >= b),
                        _ => unreachable!(),
                    }
                }
            },
        })
    }

    /// The expression with the value of each comparison's sides: what a check report shows as "measured".
    pub fn describe(&self, s: &dyn Scope) -> String {
        match self {
            Expr::Bin(l, op @ (Op::And | Op::Or), r) => format!("{}; {} {}", l.describe(s), op.sym(), r.describe(s)),
            Expr::Bin(l, op @ (Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::Eq | Op::Ne), r) => {
                let v = |e: &Expr| e.eval(s).map(|v| v.to_string()).unwrap_or_else(|e| format!("<{e}>"));
                format!("{} {} {}", v(l), op.sym(), v(r))
            }
            e => e.eval(s).map(|v| v.to_string()).unwrap_or_else(|e| format!("<{e}>")),
        }
    }

    /// Every name this expression reads (with selectors), for validation.
    pub fn names(&self, out: &mut Vec<(String, Vec<(String, Value)>)>) {
        match self {
            Expr::Lit(_) => {}
            Expr::Name(n, sel) => out.push((n.clone(), sel.clone())),
            Expr::Neg(e) | Expr::Not(e) => e.names(out),
            Expr::Call(_, a) => a.iter().for_each(|e| e.names(out)),
            Expr::Bin(l, _, r) => {
                l.names(out);
                r.names(out);
            }
        }
    }
}

/// Replaces every `{expr}` in a template by its value (numbers printed without trailing zeros); `{{` and
/// `}}` stand for literal braces (for inline TOML tables: `switch.marker={{ kind = "tcn" }}`).
pub fn substitute(template: &str, s: &dyn Scope) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        if rest[i..].starts_with("{{") || rest[i..].starts_with("}}") {
            out.push_str(&rest[..i + 1]);
            rest = &rest[i + 2..];
            continue;
        }
        if rest[i..].starts_with('}') {
            return Err(format!("unmatched `}}` in `{template}` (write `}}}}` for a literal brace)"));
        }
        out.push_str(&rest[..i]);
        let j = rest[i..].find('}').ok_or_else(|| format!("unclosed `{{` in `{template}`"))? + i;
        let v = parse(&rest[i + 1..j])?.eval(s)?;
        out.push_str(&match v {
            Value::Num(x) => crate::observe::fmt_num(x),
            v => v.to_string(),
        });
        rest = &rest[j + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    struct Map(BTreeMap<String, Value>);
    impl Scope for Map {
        fn lookup(&self, name: &str, sel: &[(String, Value)]) -> Result<Value, String> {
            let key = if sel.is_empty() { name.to_string() } else { format!("{name}@{}", sel[0].1) };
            self.0.get(&key).cloned().ok_or_else(|| format!("unknown `{key}`"))
        }
    }

    fn scope() -> Map {
        Map(BTreeMap::from([
            ("h".into(), Value::Num(20.0)),
            ("peak".into(), Value::Num(59.0)),
            ("cc".into(), Value::Str("dctcp".into())),
            ("max_n@dequeue".into(), Value::Num(24.0)),
            ("max_n@enqueue".into(), Value::Num(10.0)),
        ]))
    }

    #[test]
    fn evaluates_arithmetic_comparisons_and_selectors() {
        let s = scope();
        let e = parse("peak <= 2*h + 20 + 2").unwrap();
        assert_eq!(e.eval(&s), Ok(Value::Bool(true)));
        assert_eq!(e.describe(&s), "59 <= 62");
        let e = parse("max_n[mode='dequeue'] / max_n[mode=enqueue] >= 1.5 and cc == 'dctcp'").unwrap();
        assert_eq!(e.eval(&s), Ok(Value::Bool(true)));
        assert_eq!(parse("-(h - 25) * 2").unwrap().eval(&s), Ok(Value::Num(10.0)));
        assert_eq!(parse("max(1, h, 3)").unwrap().eval(&s), Ok(Value::Num(20.0)));
    }

    #[test]
    fn templates_substitute_expressions() {
        assert_eq!(substitute("topology.hosts={h+1}", &scope()).unwrap(), "topology.hosts=21");
        assert_eq!(substitute("x={h*0.25}us", &scope()).unwrap(), "x=5us");
        assert_eq!(substitute("m={{ k = {h} }}", &scope()).unwrap(), "m={ k = 20 }");
        assert!(parse("h +").is_err());
        assert!(parse("peak[h=]").is_err());
    }
}
