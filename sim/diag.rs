//! Diagnostics: errors and warnings that point into the user's files.
//!
//! Every parser returns these; only the CLI renders them. A `Diagnostic` always names the file,
//! line and column (1-based) and says what was expected.

use std::fmt;

/// A position in a user's file (1-based line and column).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
pub struct Span {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

impl Span {
    pub fn new(file: impl Into<String>, line: u32, col: u32) -> Self {
        Span {
            file: file.into(),
            line,
            col,
        }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum Severity {
    Error,
    Warning,
}

/// One error or warning about the input.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub span: Span,
    pub message: String,
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            span,
            message: message.into(),
            hint: None,
        }
    }
    pub fn warning(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            span,
            message: message.into(),
            hint: None,
        }
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{}: {}: {}", self.span, sev, self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

/// Input errors: one or more diagnostics, at least one of them an error. The CLI exits 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError(pub Vec<Diagnostic>);

impl From<Diagnostic> for InputError {
    fn from(d: Diagnostic) -> Self {
        InputError(vec![d])
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InputError {}

/// Where an embedded block of text (an EOS `config: |`, a netplan file) starts in the user's
/// file, so diagnostics about its lines point into that file. `line`/`col` are those of the
/// block's first character; later lines of the block start at `col` too (YAML block scalars
/// strip the same indentation from every line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextOrigin {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

impl TextOrigin {
    /// The span of column `col0` (0-based, within the block line) on block line `idx` (0-based).
    pub fn span_at(&self, idx: usize, col0: usize) -> Span {
        let col = if idx == 0 { self.col } else { self.col.max(1) };
        Span::new(self.file.clone(), self.line + idx as u32, col + col0 as u32)
    }
}
