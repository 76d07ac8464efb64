//! A value bound to a statement or written into a `COPY`, in either store. The store's values
//! are SQLite's kinds (integer, real, text, NULL): a SQLite statement takes them as they are,
//! and PostgreSQL wants each in its column's type, which the driver checks before it writes
//! (an integer into a REAL column goes as a double, as SQLite would store it). The writer,
//! the spool's upload and `store copy` all bind through this one type.

use std::borrow::Cow;
use std::error::Error;

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type};

/// See the module's documentation.
#[derive(Debug, Clone)]
pub(crate) enum Parameter<'a> {
    Null,
    Integer(i64),
    Real(f64),
    Text(Cow<'a, str>),
}

impl<'a> Parameter<'a> {
    /// A sample's or a Config's cell, as the columns write it.
    pub(crate) fn from_cell(cell: crate::columns::Cell<'a>) -> Parameter<'a> {
        match cell {
            crate::columns::Cell::Null => Parameter::Null,
            crate::columns::Cell::Integer(number) => Parameter::Integer(number),
            crate::columns::Cell::Text(text) => Parameter::Text(text),
        }
    }
}

impl<'a> From<&'a rusqlite::types::Value> for Parameter<'a> {
    /// A value as the writer's records give it (a blob, which no column holds, as NULL).
    fn from(value: &'a rusqlite::types::Value) -> Parameter<'a> {
        use rusqlite::types::Value;
        match value {
            Value::Integer(number) => Parameter::Integer(*number),
            Value::Real(number) => Parameter::Real(*number),
            Value::Text(text) => Parameter::Text(Cow::Borrowed(text)),
            Value::Null | Value::Blob(_) => Parameter::Null,
        }
    }
}

impl<'a> From<&'a crate::database::Value> for Parameter<'a> {
    /// A value as either store's reader gives it.
    fn from(value: &'a crate::database::Value) -> Parameter<'a> {
        use crate::database::Value;
        match value {
            Value::Null => Parameter::Null,
            Value::Integer(number) => Parameter::Integer(*number),
            Value::Real(number) => Parameter::Real(*number),
            Value::Text(text) => Parameter::Text(Cow::Borrowed(text)),
        }
    }
}

impl rusqlite::ToSql for Parameter<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Parameter::Null => ValueRef::Null,
            Parameter::Integer(number) => ValueRef::Integer(*number),
            Parameter::Real(number) => ValueRef::Real(*number),
            Parameter::Text(text) => ValueRef::Text(text.as_bytes()),
        }))
    }
}

impl ToSql for Parameter<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match (self, ty) {
            (Parameter::Null, _) => Ok(IsNull::Yes),
            (Parameter::Integer(number), &Type::INT8) => ToSql::to_sql(number, ty, out),
            (Parameter::Integer(number), &Type::FLOAT8) => {
                ToSql::to_sql(&(*number as f64), ty, out)
            }
            (Parameter::Real(number), &Type::FLOAT8) => ToSql::to_sql(number, ty, out),
            (Parameter::Text(text), &Type::TEXT) => ToSql::to_sql(&text.as_ref(), ty, out),
            (value, ty) => Err(format!("{value:?} cannot be stored in a {ty} column").into()),
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::INT8 | Type::FLOAT8 | Type::TEXT)
    }

    postgres::types::to_sql_checked!();
}

/// The references a statement or a `COPY` takes.
pub(crate) fn references<'a>(values: &'a [Parameter<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    values
        .iter()
        .map(|value| value as &(dyn ToSql + Sync))
        .collect()
}
