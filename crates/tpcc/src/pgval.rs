//! Binary wire conversions between oio's engine-neutral values and PostgreSQL types.
//!
//! The transactions are written once for both engines with [`Param`] and [`Val`]; this module
//! lets the PostgreSQL client bind them to whatever type the server inferred for a parameter
//! (int4, int8, float8, numeric, text…), including NUMERIC, which the client does not convert
//! natively. Money columns stay NUMERIC on PostgreSQL, as in HammerDB's and go-tpc's schemas.

use crate::db::{Param, Val};
use bytes::{BufMut, BytesMut};
use postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use std::error::Error;

type BoxErr = Box<dyn Error + Sync + Send>;

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxErr> {
        let as_int = |p: &Param| -> Result<i64, BoxErr> {
            match p {
                Param::Int(v) => Ok(*v),
                Param::Float(f) if f.fract() == 0.0 => Ok(*f as i64),
                other => Err(format!("cannot bind {other:?} to an integer parameter").into()),
            }
        };
        let as_float = |p: &Param| -> Result<f64, BoxErr> {
            match p {
                Param::Int(v) => Ok(*v as f64),
                Param::Float(f) => Ok(*f),
                other => Err(format!("cannot bind {other:?} to a numeric parameter").into()),
            }
        };
        match (self, ty) {
            (Param::Null, _) => return Ok(IsNull::Yes),
            (Param::Ints(v), &Type::INT4_ARRAY) => {
                let v: Vec<i32> = v
                    .iter()
                    .map(|&i| i32::try_from(i))
                    .collect::<Result<_, _>>()?;
                return v.to_sql(ty, out);
            }
            (Param::Ints(v), &Type::INT8_ARRAY) => return v.to_sql(ty, out),
            (Param::Ints(_), other) => {
                return Err(
                    format!("oio cannot bind an array to a parameter of type {other}").into(),
                )
            }
            _ => {}
        }
        match *ty {
            Type::INT2 => out.put_i16(i16::try_from(as_int(self)?)?),
            Type::INT4 => out.put_i32(i32::try_from(as_int(self)?)?),
            Type::INT8 => out.put_i64(as_int(self)?),
            Type::FLOAT4 => out.put_f32(as_float(self)? as f32),
            Type::FLOAT8 => out.put_f64(as_float(self)?),
            Type::NUMERIC => encode_numeric(as_float(self)?, out),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => match self {
                Param::Text(s) => out.put_slice(s.as_bytes()),
                Param::Int(v) => out.put_slice(v.to_string().as_bytes()),
                Param::Float(f) => out.put_slice(f.to_string().as_bytes()),
                Param::Null | Param::Ints(_) => return Err("handled above".into()),
            },
            ref other => return Err(format!("oio cannot bind a parameter of type {other}").into()),
        }
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// NUMERIC binary form: ndigits, weight, sign, dscale, then base-10000 digits. Values are
/// rounded to 4 decimals, more than any TPC-C column has (taxes and discounts have 4).
fn encode_numeric(v: f64, out: &mut BytesMut) {
    let neg = v < 0.0;
    let scaled = (v.abs() * 10_000.0).round() as u128;
    let (int, frac) = (scaled / 10_000, (scaled % 10_000) as i16);
    let mut groups = Vec::new();
    let mut i = int;
    while i > 0 {
        groups.push((i % 10_000) as i16);
        i /= 10_000;
    }
    groups.reverse();
    let weight = groups.len() as i16 - 1;
    if frac != 0 {
        groups.push(frac);
    }
    // Trailing zero groups of the integer part are legal; PostgreSQL normalises them.
    out.put_i16(groups.len() as i16);
    out.put_i16(if groups.is_empty() { 0 } else { weight });
    out.put_u16(if neg && !groups.is_empty() { 0x4000 } else { 0 });
    out.put_u16(4);
    for g in groups {
        out.put_i16(g);
    }
}

fn decode_numeric(raw: &[u8]) -> Result<f64, BoxErr> {
    let rd = |i: usize| -> Result<i16, BoxErr> {
        raw.get(i..i + 2)
            .map(|b| i16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "short NUMERIC value".into())
    };
    let ndigits = rd(0)? as usize;
    let weight = rd(2)? as i32;
    let sign = rd(4)? as u16;
    if sign == 0xC000 {
        return Ok(f64::NAN);
    }
    let mut v = 0f64;
    for k in 0..ndigits {
        let d = rd(8 + 2 * k)? as f64;
        v += d * 10_000f64.powi(weight - k as i32);
    }
    Ok(if sign == 0x4000 { -v } else { v })
}

impl<'a> FromSql<'a> for Val {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxErr> {
        Ok(match *ty {
            Type::INT2 => Val::Int(i16::from_sql(ty, raw)? as i64),
            Type::INT4 => Val::Int(i32::from_sql(ty, raw)? as i64),
            Type::INT8 => Val::Int(i64::from_sql(ty, raw)?),
            Type::FLOAT4 => Val::Float(f32::from_sql(ty, raw)? as f64),
            Type::FLOAT8 => Val::Float(f64::from_sql(ty, raw)?),
            Type::NUMERIC => Val::Float(decode_numeric(raw)?),
            Type::BOOL => Val::Int(bool::from_sql(ty, raw)? as i64),
            // Microseconds since 2000-01-01; oio only passes timestamps through.
            Type::TIMESTAMP | Type::TIMESTAMPTZ => Val::Int(i64::from_sql(&Type::INT8, raw)?),
            _ => Val::Text(String::from_utf8_lossy(raw).into_owned()),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Self, BoxErr> {
        Ok(Val::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_round_trips() {
        for v in [
            0.0, 1.0, -10.0, 0.05, 0.1234, 300000.0, 9999.99, -1234.56, 12345678.9, 10000.0,
        ] {
            let mut b = BytesMut::new();
            encode_numeric(v, &mut b);
            let back = decode_numeric(&b).unwrap();
            assert!((back - v).abs() < 1e-9, "{v} -> {back}");
        }
    }
}
