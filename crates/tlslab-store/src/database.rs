//! The one way the store's readers query: a SQLite file or a PostgreSQL database, with the
//! same SQL, rows read by position as the few kinds the store keeps (integers, reals, text).
//!
//! The SQL is written once, as SQLite takes it, with two marks for what differs:
//! `?1`, `?2`… are the parameters (PostgreSQL's `$1`, `$2`…), and `{run}` stands before the
//! conditions of a query of samples, trials, Configs or replays: nothing in a SQLite file,
//! which holds one run, and `run_id = $n AND ` (`{s.run}`: `s.run_id = $n AND `) in a database of many runs, bound to the run
//! the store was opened on. (No crate translates between the two dialects for so small a
//! difference; sqlx and diesel would each replace the whole store.)

use std::cell::RefCell;

use crate::StoreError;

/// An open store's connection.
pub(crate) enum Connection {
    /// A SQLite file (one run).
    Sqlite(rusqlite::Connection),
    /// A PostgreSQL database, read for one of its runs.
    Postgres {
        /// The client; its calls take `&mut`, the store's readers `&self`.
        client: Box<RefCell<postgres::Client>>,
        /// The run the store reads.
        run: i64,
    },
}

/// A parameter of a query.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Parameter<'a> {
    Integer(i64),
    Text(&'a str),
}

impl rusqlite::ToSql for Parameter<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Parameter::Integer(number) => number.to_sql(),
            Parameter::Text(text) => text.to_sql(),
        }
    }
}

/// One row of a result, read by position.
pub(crate) enum Row<'a> {
    Sqlite(&'a rusqlite::Row<'a>),
    Postgres(&'a postgres::Row),
}

/// A value as the store keeps it.
pub(crate) enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
}

impl Row<'_> {
    /// The value at `index`, whatever its kind. Text that is not UTF-8 (a damaged or foreign
    /// file) is an error here, not a panic further on.
    pub fn value(&self, index: usize) -> Result<Value, StoreError> {
        match self {
            Row::Sqlite(row) => Ok(match row.get_ref(index)? {
                rusqlite::types::ValueRef::Null => Value::Null,
                rusqlite::types::ValueRef::Integer(number) => Value::Integer(number),
                rusqlite::types::ValueRef::Real(number) => Value::Real(number),
                rusqlite::types::ValueRef::Text(text) | rusqlite::types::ValueRef::Blob(text) => {
                    Value::Text(
                        std::str::from_utf8(text)
                            .map_err(|source| StoreError::NotText {
                                column: row.as_ref().column_name(index).unwrap_or("?").to_string(),
                                source,
                            })?
                            .to_string(),
                    )
                }
            }),
            Row::Postgres(row) => {
                use postgres::types::Type;
                let column_type = row
                    .columns()
                    .get(index)
                    .map(|column| column.type_().clone());
                let read = |error: postgres::Error| StoreError::Query(Box::new(error));
                Ok(match column_type {
                    Some(Type::INT8) => row
                        .try_get::<_, Option<i64>>(index)
                        .map_err(read)?
                        .map_or(Value::Null, Value::Integer),
                    Some(Type::INT4) => row
                        .try_get::<_, Option<i32>>(index)
                        .map_err(read)?
                        .map_or(Value::Null, |number| Value::Integer(i64::from(number))),
                    Some(Type::BOOL) => row
                        .try_get::<_, Option<bool>>(index)
                        .map_err(read)?
                        .map_or(Value::Null, |flag| Value::Integer(i64::from(flag))),
                    Some(Type::FLOAT8) => row
                        .try_get::<_, Option<f64>>(index)
                        .map_err(read)?
                        .map_or(Value::Null, Value::Real),
                    _ => row
                        .try_get::<_, Option<String>>(index)
                        .map_err(read)?
                        .map_or(Value::Null, Value::Text),
                })
            }
        }
    }

    /// Hands `use_value` the value at `index` as SQLite's reference to it, text as bytes
    /// (UTF-8 or not): for the export, which copies every value once and shows damaged text
    /// as it can.
    pub fn with_raw<T>(
        &self,
        index: usize,
        use_value: impl FnOnce(rusqlite::types::ValueRef<'_>) -> T,
    ) -> Result<T, StoreError> {
        use rusqlite::types::ValueRef;
        match self {
            Row::Sqlite(row) => Ok(use_value(row.get_ref(index)?)),
            Row::Postgres(_) => Ok(match self.value(index)? {
                Value::Null => use_value(ValueRef::Null),
                Value::Integer(number) => use_value(ValueRef::Integer(number)),
                Value::Real(number) => use_value(ValueRef::Real(number)),
                Value::Text(text) => use_value(ValueRef::Text(text.as_bytes())),
            }),
        }
    }

    /// Hands `use_text` the text at `index` (`None` for NULL) without copying it.
    pub fn with_str<T>(
        &self,
        index: usize,
        use_text: impl FnOnce(Option<&str>) -> T,
    ) -> Result<T, StoreError> {
        match self {
            Row::Sqlite(row) => {
                let value = row.get_ref(index)?;
                let text = value.as_str_or_null().map_err(|_| StoreError::Kind {
                    index,
                    wanted: "text",
                })?;
                Ok(use_text(text))
            }
            Row::Postgres(row) => {
                let text: Option<&str> = row
                    .try_get(index)
                    .map_err(|error| StoreError::Query(Box::new(error)))?;
                Ok(use_text(text))
            }
        }
    }

    /// The integer at `index` (`None` for NULL), read without the detour through [`Value`]
    /// where the column is a BIGINT: a Config read once (`read.rs`) reads a few dozen per
    /// sample.
    pub fn integer(&self, index: usize) -> Result<Option<i64>, StoreError> {
        if let Row::Postgres(row) = self {
            let is_bigint = row
                .columns()
                .get(index)
                .is_some_and(|column| *column.type_() == postgres::types::Type::INT8);
            if is_bigint {
                return row
                    .try_get::<_, Option<i64>>(index)
                    .map_err(|error| StoreError::Query(Box::new(error)));
            }
        }
        self.get(index)
    }

    /// The text at `index` (`None` for NULL), borrowed from the row.
    pub fn text(&self, index: usize) -> Result<Option<&str>, StoreError> {
        match self {
            Row::Sqlite(row) => {
                row.get_ref(index)?
                    .as_str_or_null()
                    .map_err(|_| StoreError::Kind {
                        index,
                        wanted: "text",
                    })
            }
            Row::Postgres(row) => row
                .try_get(index)
                .map_err(|error| StoreError::Query(Box::new(error))),
        }
    }

    /// The value at `index` as `T` (an integer, a real, text, a flag, or an `Option` of one).
    pub fn get<T: FromValue>(&self, index: usize) -> Result<T, StoreError> {
        T::from_value(self.value(index)?).ok_or_else(|| StoreError::Kind {
            index,
            wanted: std::any::type_name::<T>(),
        })
    }
}

/// What a [`Value`] can be read as.
pub(crate) trait FromValue: Sized {
    /// The value as `Self`, if it is of a kind that reads as one.
    fn from_value(value: Value) -> Option<Self>;
}

impl FromValue for Value {
    fn from_value(value: Value) -> Option<Value> {
        Some(value)
    }
}

impl FromValue for i64 {
    fn from_value(value: Value) -> Option<i64> {
        match value {
            Value::Integer(number) => Some(number),
            _ => None,
        }
    }
}

impl FromValue for f64 {
    fn from_value(value: Value) -> Option<f64> {
        match value {
            Value::Integer(number) => Some(number as f64),
            Value::Real(number) => Some(number),
            _ => None,
        }
    }
}

impl FromValue for bool {
    fn from_value(value: Value) -> Option<bool> {
        i64::from_value(value).map(|number| number != 0)
    }
}

impl FromValue for String {
    fn from_value(value: Value) -> Option<String> {
        match value {
            Value::Text(text) => Some(text),
            _ => None,
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: Value) -> Option<Option<T>> {
        match value {
            Value::Null => Some(None),
            value => T::from_value(value).map(Some),
        }
    }
}

impl Connection {
    /// Hands `each` every row of `sql` as it is read (memory bounded whatever the result's
    /// size: PostgreSQL's rows are streamed, not collected).
    pub fn each(
        &self,
        sql: &str,
        parameters: &[Parameter<'_>],
        mut each: impl FnMut(&Row<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.each_until(sql, parameters, |row| {
            each(row).map(|()| std::ops::ControlFlow::Continue(()))
        })
    }

    /// [`Connection::each`] until `each` breaks: the rest of the rows are left unread.
    pub fn each_until(
        &self,
        sql: &str,
        parameters: &[Parameter<'_>],
        mut each: impl FnMut(&Row<'_>) -> Result<std::ops::ControlFlow<()>, StoreError>,
    ) -> Result<(), StoreError> {
        match self {
            Connection::Sqlite(connection) => {
                let sql = sql.replace("{run}", "").replace("{s.run}", "");
                let mut statement = connection.prepare_cached(&sql)?;
                let mut rows = statement.query(rusqlite::params_from_iter(parameters.iter()))?;
                while let Some(row) = rows.next()? {
                    if each(&Row::Sqlite(row))?.is_break() {
                        break;
                    }
                }
                Ok(())
            }
            Connection::Postgres { client, run, .. } => {
                // The run is the last parameter, when the query names it.
                let names_run = sql.contains("{run}") || sql.contains("{s.run}");
                let sql = postgres_sql(sql, parameters.len() + 1);
                let mut bound: Vec<Box<dyn postgres::types::ToSql + Sync>> = parameters
                    .iter()
                    .map(|parameter| -> Box<dyn postgres::types::ToSql + Sync> {
                        match parameter {
                            Parameter::Integer(number) => Box::new(*number),
                            Parameter::Text(text) => Box::new(text.to_string()),
                        }
                    })
                    .collect();
                if names_run {
                    bound.push(Box::new(*run));
                }
                let mut client = client.borrow_mut();
                let query = |error: postgres::Error| StoreError::Query(Box::new(error));
                let mut rows = client
                    .query_raw(&sql, bound.iter().map(|value| value.as_ref()))
                    .map_err(query)?;
                use postgres::fallible_iterator::FallibleIterator;
                while let Some(row) = rows.next().map_err(query)? {
                    if each(&Row::Postgres(&row))?.is_break() {
                        break;
                    }
                }
                Ok(())
            }
        }
    }

    /// Every row of `sql`, each made into a `T` by `make`.
    pub fn rows<T>(
        &self,
        sql: &str,
        parameters: &[Parameter<'_>],
        mut make: impl FnMut(&Row<'_>) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut made = Vec::new();
        self.each(sql, parameters, |row| {
            made.push(make(row)?);
            Ok(())
        })?;
        Ok(made)
    }

    /// The first row of `sql`, if there is one, made into a `T` by `make`.
    pub fn first<T>(
        &self,
        sql: &str,
        parameters: &[Parameter<'_>],
        make: impl FnOnce(&Row<'_>) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        let mut make = Some(make);
        let mut made = None;
        self.each(sql, parameters, |row| {
            if let Some(make) = make.take() {
                made = Some(make(row)?);
            }
            Ok(())
        })?;
        Ok(made)
    }

    /// The one row of an aggregate query (`COUNT`, `SUM`…), made into a `T` by `make`.
    pub fn one<T>(
        &self,
        sql: &str,
        parameters: &[Parameter<'_>],
        make: impl FnOnce(&Row<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.first(sql, parameters, make)?.ok_or(StoreError::Kind {
            index: 0,
            wanted: "a row",
        })
    }
}

/// `sql` as PostgreSQL takes it: `$n` for `?n`, `{run}` the condition on the run (its
/// parameter numbered `run_parameter`), and SQLite's `NOT INDEXED` left out.
fn postgres_sql(sql: &str, run_parameter: usize) -> String {
    let mut translated = String::with_capacity(sql.len() + 16);
    let mut characters = sql.chars().peekable();
    let mut quoted = false;
    while let Some(character) = characters.next() {
        match character {
            '\'' => {
                quoted = !quoted;
                translated.push(character);
            }
            '?' if !quoted && characters.peek().is_some_and(char::is_ascii_digit) => {
                translated.push('$')
            }
            _ => translated.push(character),
        }
    }
    translated
        .replace("{run}", &format!("run_id = ${run_parameter} AND "))
        .replace("{s.run}", &format!("s.run_id = ${run_parameter} AND "))
        .replace(" NOT INDEXED", "")
}

#[cfg(test)]
mod tests {
    use super::postgres_sql;

    #[test]
    fn parameters_and_the_run_are_spelt_for_postgresql() {
        assert_eq!(
            postgres_sql(
                "SELECT x FROM samples NOT INDEXED WHERE {run}config_id = ?1 AND error = ?2 AND outcome = '?1'",
                3
            ),
            "SELECT x FROM samples WHERE run_id = $3 AND config_id = $1 AND error = $2 AND outcome = '?1'"
        );
    }
}
