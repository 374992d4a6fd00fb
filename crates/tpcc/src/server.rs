//! Server-side transactions on PostgreSQL (`--mode server`): one PL/pgSQL function per
//! transaction, called with one round trip, as HammerDB does by default.
//!
//! The functions are created at build time (and again before a server-mode run, so an older
//! schema works). A New-Order with the unused item raises SQLSTATE `OIO01`, which rolls the
//! whole call back; the driver counts it as an intentional rollback, not as an error.

use crate::pgsession::{PgSession, ServerCalls};
use crate::sql::StmtError;
use crate::txn::{CustomerBy, Input, Outcome};

pub use crate::sql::PG_USER_ABORT_SQLSTATE as USER_ABORT_SQLSTATE;

/// Function names, for dropping.
const FUNCTIONS: [&str; 5] = [
    "oio_new_order(int, int, int, int[], int[], int[], int)",
    "oio_payment(int, int, int, int, int, text, numeric)",
    "oio_order_status(int, int, int, text)",
    "oio_delivery(int, int)",
    "oio_stock_level(int, int, int)",
];

/// DDL dropping the functions.
pub fn drop_functions() -> String {
    FUNCTIONS
        .iter()
        .map(|f| format!("DROP FUNCTION IF EXISTS {f};\n"))
        .collect()
}

/// DDL creating (or replacing) the five functions.
pub fn create_functions() -> String {
    format!(
        r#"
CREATE OR REPLACE FUNCTION oio_new_order(p_w int, p_d int, p_c int, p_items int[], p_supply int[], p_qty int[], p_all_local int)
RETURNS numeric LANGUAGE plpgsql AS $f$
DECLARE
  v_w_tax numeric; v_d_tax numeric; v_o_id int; v_disc numeric; v_price numeric;
  v_dist text; v_amount numeric; v_total numeric := 0; n int := array_length(p_items, 1);
BEGIN
  SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w;
  UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d
    RETURNING d_next_o_id - 1, d_tax INTO v_o_id, v_d_tax;
  SELECT c_discount INTO v_disc FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = p_c;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    VALUES (v_o_id, p_d, p_w, p_c, current_timestamp, NULL, n, p_all_local);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d, p_w);
  FOR i IN 1 .. n LOOP
    SELECT i_price INTO v_price FROM item WHERE i_id = p_items[i];
    IF NOT FOUND THEN
      RAISE EXCEPTION 'item % is not used (intentional New-Order rollback)', p_items[i]
        USING ERRCODE = '{USER_ABORT_SQLSTATE}';
    END IF;
    UPDATE stock SET
        s_quantity = CASE WHEN s_quantity >= p_qty[i] + 10 THEN s_quantity - p_qty[i] ELSE s_quantity - p_qty[i] + 91 END,
        s_ytd = s_ytd + p_qty[i], s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN p_supply[i] <> p_w THEN 1 ELSE 0 END
      WHERE s_i_id = p_items[i] AND s_w_id = p_supply[i]
      RETURNING CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
        WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07
        WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END INTO v_dist;
    v_amount := round(p_qty[i] * v_price, 2);
    v_total := v_total + v_amount;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      VALUES (v_o_id, p_d, p_w, i, p_items[i], p_supply[i], NULL, p_qty[i], v_amount, v_dist);
  END LOOP;
  RETURN v_total * (1 - v_disc) * (1 + v_w_tax + v_d_tax);
END $f$;

CREATE OR REPLACE FUNCTION oio_payment(p_w int, p_d int, p_c_w int, p_c_d int, p_c_id int, p_last text, p_amount numeric)
RETURNS int LANGUAGE plpgsql AS $f$
DECLARE v_w_name text; v_d_name text; v_c_id int := p_c_id; v_n int; v_credit text;
BEGIN
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w RETURNING w_name INTO v_w_name;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d RETURNING d_name INTO v_d_name;
  IF p_last IS NOT NULL THEN
    SELECT count(*) INTO v_n FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_last = p_last;
    SELECT c_id INTO v_c_id FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_last = p_last
      ORDER BY c_first OFFSET (v_n - 1) / 2 LIMIT 1;
  END IF;
  UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
      c_payment_cnt = c_payment_cnt + 1
    WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c_id RETURNING c_credit INTO v_credit;
  IF v_credit = 'BC' THEN
    UPDATE customer SET c_data = substr(format('%s %s %s %s %s %s | ', v_c_id, p_c_d, p_c_w, p_d, p_w, p_amount) || c_data, 1, 500)
      WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c_id;
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c_id, p_c_d, p_c_w, p_d, p_w, current_timestamp, p_amount, v_w_name || '    ' || v_d_name);
  RETURN v_c_id;
END $f$;

CREATE OR REPLACE FUNCTION oio_order_status(p_w int, p_d int, p_c_id int, p_last text)
RETURNS int LANGUAGE plpgsql AS $f$
DECLARE v_c_id int := p_c_id; v_n int; v_bal numeric; v_o_id int; v_lines int;
BEGIN
  IF p_last IS NOT NULL THEN
    SELECT count(*) INTO v_n FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last;
    SELECT c_id INTO v_c_id FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last
      ORDER BY c_first OFFSET (v_n - 1) / 2 LIMIT 1;
  END IF;
  SELECT c_balance INTO v_bal FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c_id;
  SELECT o_id INTO v_o_id FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c_id
    ORDER BY o_id DESC LIMIT 1;
  SELECT count(*) INTO v_lines FROM (SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
    FROM order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o_id) l;
  RETURN v_lines;
END $f$;

CREATE OR REPLACE FUNCTION oio_delivery(p_w int, p_carrier int)
RETURNS int LANGUAGE plpgsql AS $f$
DECLARE v_o_id int; v_c_id int; v_sum numeric; v_done int := 0;
BEGIN
  FOR v_d IN 1 .. 10 LOOP
    DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d
      AND no_o_id = (SELECT min(no_o_id) FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d)
      RETURNING no_o_id INTO v_o_id;
    CONTINUE WHEN v_o_id IS NULL;
    UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o_id
      RETURNING o_c_id INTO v_c_id;
    UPDATE order_line SET ol_delivery_d = current_timestamp WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o_id;
    SELECT sum(ol_amount) INTO v_sum FROM order_line WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o_id;
    UPDATE customer SET c_balance = c_balance + coalesce(v_sum, 0), c_delivery_cnt = c_delivery_cnt + 1
      WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c_id;
    v_done := v_done + 1;
  END LOOP;
  RETURN v_done;
END $f$;

CREATE OR REPLACE FUNCTION oio_stock_level(p_w int, p_d int, p_threshold int)
RETURNS int LANGUAGE plpgsql AS $f$
DECLARE v_next int; v_count int;
BEGIN
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
  SELECT count(DISTINCT s_i_id) INTO v_count FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id
    WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20 AND s_quantity < p_threshold;
  RETURN v_count;
END $f$;
"#
    )
}

impl ServerCalls {
    /// Prepares the calls.
    pub fn prepare(c: &mut PgSession) -> Result<ServerCalls, StmtError> {
        let mut p = |sql: &str| c.prepare(sql);
        Ok(ServerCalls {
            new_order: p("SELECT oio_new_order($1, $2, $3, $4, $5, $6, $7)::float8")?,
            payment: p("SELECT oio_payment($1, $2, $3, $4, $5, $6, $7::float8::numeric)")?,
            order_status: p("SELECT oio_order_status($1, $2, $3, $4)")?,
            delivery: p("SELECT oio_delivery($1, $2)")?,
            stock_level: p("SELECT oio_stock_level($1, $2, $3)")?,
        })
    }

    /// Runs one transaction as one function call (its own implicit transaction).
    pub fn execute(&self, c: &mut PgSession, input: &Input) -> Result<Outcome, StmtError> {
        let i = |v: i64| v as i32;
        let (id, name): (Option<i32>, Option<&str>) = match input {
            Input::Payment { by, .. } | Input::OrderStatus { by, .. } => match by {
                CustomerBy::Id(id) => (Some(*id as i32), None),
                CustomerBy::Name(n) => (None, Some(n.as_str())),
            },
            _ => (None, None),
        };
        let r = match input {
            Input::NewOrder {
                w_id,
                d_id,
                c_id,
                lines,
                all_local,
            } => {
                let items: Vec<i32> = lines.iter().map(|l| l.i_id as i32).collect();
                let supply: Vec<i32> = lines.iter().map(|l| l.supply_w_id as i32).collect();
                let qty: Vec<i32> = lines.iter().map(|l| l.quantity as i32).collect();
                c.query_prepared(
                    &self.new_order,
                    &[
                        &i(*w_id),
                        &i(*d_id),
                        &i(*c_id),
                        &items,
                        &supply,
                        &qty,
                        &(*all_local as i32),
                    ],
                )
            }
            Input::Payment {
                w_id,
                d_id,
                c_w_id,
                c_d_id,
                amount,
                ..
            } => c.query_prepared(
                &self.payment,
                &[
                    &i(*w_id),
                    &i(*d_id),
                    &i(*c_w_id),
                    &i(*c_d_id),
                    &id,
                    &name,
                    amount,
                ],
            ),
            Input::OrderStatus { w_id, d_id, .. } => {
                c.query_prepared(&self.order_status, &[&i(*w_id), &i(*d_id), &id, &name])
            }
            Input::Delivery { w_id, carrier_id } => {
                c.query_prepared(&self.delivery, &[&i(*w_id), &i(*carrier_id)])
            }
            Input::StockLevel {
                w_id,
                d_id,
                threshold,
            } => c.query_prepared(&self.stock_level, &[&i(*w_id), &i(*d_id), &i(*threshold)]),
        };
        match r {
            Ok(rows) if rows.len() == 1 => Ok(Outcome::Committed),
            Ok(rows) => Err(StmtError::Fatal(format!(
                "a server-side transaction function returned {} rows, not 1",
                rows.len()
            ))),
            Err(StmtError::UserAbort) => Ok(Outcome::RolledBack),
            Err(e) => Err(e),
        }
    }
}
