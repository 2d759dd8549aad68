//! Reading records back from where their lines are in a journal ([`Span`]), whole or
//! with their payload decoded straight from the file.

use super::{io_err, JournalError, Line, Span};
use crate::record::{Record, RecordKind};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Reads records back from their [`Span`]s in a journal.
#[derive(Debug)]
pub struct SpanReader {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
}

impl SpanReader {
    /// Opens the journal `file` (as given by [`RecordReader::file`]).
    pub fn open(file: &Path) -> Result<SpanReader, JournalError> {
        let f = File::open(file).map_err(io_err(file))?;
        Ok(SpanReader {
            path: file.to_path_buf(),
            file: f,
            buf: Vec::new(),
        })
    }

    /// The record whose line is at `span`.
    pub fn record(&mut self, span: Span) -> Result<Record, JournalError> {
        match self.parse::<Line>(span)? {
            Some(Line::Record(r)) => Ok(r),
            _ => Err(self.changed(span)),
        }
    }

    /// The key of the record whose line is at `span`, and its payload decoded as `T`
    /// straight from the file (what [`Record::decode`] gives of [`SpanReader::record`],
    /// without the line in memory nor the JSON tree of the payload in between: a
    /// 2,000-CPU `c2c.matrix` line of 33 MB makes a tree of about 200 MB). `Ok(None)`:
    /// the record is not of `T`'s kind, or does not decode as `T`.
    pub fn decode<T: RecordKind>(
        &mut self,
        span: Span,
    ) -> Result<Option<(String, T)>, JournalError> {
        /// A record line with its payload as `T` (the other fields are not needed).
        #[derive(serde::Deserialize)]
        #[serde(bound = "T: serde::de::DeserializeOwned")]
        struct Typed<T> {
            line: String,
            key: String,
            kind: String,
            data: T,
        }
        /// The same line, its payload skipped, when it does not decode as `T`.
        #[derive(serde::Deserialize)]
        struct Head {
            line: String,
            #[serde(rename = "key")]
            _key: String,
            #[serde(rename = "data")]
            _data: serde::de::IgnoredAny,
        }
        // A line of a MiB or more is parsed as it is read (slower, but the line is
        // never held); a shorter one from memory.
        let big = span.len >= 1 << 20;
        let typed = match big {
            true => self.stream::<Typed<T>>(span)?,
            false => self.parse::<Typed<T>>(span)?,
        };
        if let Some(t) = typed {
            if t.line == "record" {
                return Ok((t.kind == T::KIND).then_some((t.key, t.data)));
            }
        }
        let head = match big {
            true => self.stream::<Head>(span)?,
            false => self.parse::<Head>(span)?,
        };
        match head {
            Some(h) if h.line == "record" => Ok(None),
            _ => Err(self.changed(span)),
        }
    }

    /// The line at `span` parsed as `L`, `None` if it does not parse.
    fn parse<L: serde::de::DeserializeOwned>(
        &mut self,
        span: Span,
    ) -> Result<Option<L>, JournalError> {
        self.buf.clear();
        self.file
            .seek(SeekFrom::Start(span.offset))
            .map_err(io_err(&self.path))?;
        (&self.file)
            .take(span.len)
            .read_to_end(&mut self.buf)
            .map_err(io_err(&self.path))?;
        let parsed = serde_json::from_slice::<L>(&self.buf).ok();
        if self.buf.capacity() > 1 << 20 {
            self.buf = Vec::new();
        }
        Ok(parsed)
    }

    /// The line at `span` parsed as `L` as it is read from the file (64 KiB at a time),
    /// `None` if it does not parse.
    fn stream<L: serde::de::DeserializeOwned>(
        &mut self,
        span: Span,
    ) -> Result<Option<L>, JournalError> {
        self.file
            .seek(SeekFrom::Start(span.offset))
            .map_err(io_err(&self.path))?;
        let input = BufReader::with_capacity(64 << 10, (&self.file).take(span.len));
        Ok(serde_json::from_reader::<_, L>(input).ok())
    }

    fn changed(&self, span: Span) -> JournalError {
        JournalError::NotABundle {
            path: self.path.clone(),
            reason: format!(
                "the record at byte {} changed since the journal was read; read it again (was it rewritten meanwhile?)",
                span.offset
            ),
        }
    }
}
