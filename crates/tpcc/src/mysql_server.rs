//! Server-side transactions on MariaDB/MySQL (`--mode server`): one stored procedure per
//! transaction, called with one round trip, as HammerDB runs them.
//!
//! Each procedure opens and commits its own transaction and rolls back on any error before
//! passing it on (so a deadlock or lock-wait timeout reaches the driver, which retries).
//! MySQL procedures take no arrays, so New-Order's lines travel as one string
//! `item:supply:quantity,…`. The unused item of the 1 % rollbacks signals SQLSTATE 45001,
//! which the driver counts as an intentional rollback.

use crate::db::{Session, StmtError};
use crate::error::Result;
use crate::mysql_session::MySession;
use crate::mysql_session::USER_ABORT_SQLSTATE;
use crate::txn::{CustomerBy, Input, Outcome};
use mysql::prelude::Queryable;

const PROCEDURES: [&str; 5] = [
    "oio_new_order",
    "oio_payment",
    "oio_order_status",
    "oio_delivery",
    "oio_stock_level",
];

/// DDL dropping the procedures.
pub fn drop_procedures() -> String {
    PROCEDURES
        .iter()
        .map(|p| format!("DROP PROCEDURE IF EXISTS {p};\n"))
        .collect()
}

fn definitions() -> [String; 5] {
    const CUSTOMER_BY_NAME: &str = "SELECT count(*) INTO v_n FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_last = p_last;
    SET v_n = GREATEST(v_n - 1, 0) DIV 2;
    SELECT c_id INTO v_c_id FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_last = p_last ORDER BY c_first LIMIT v_n, 1;";
    const ON_ERROR: &str = "DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;";
    [
        format!(
            "CREATE PROCEDURE oio_new_order(p_w INT, p_d INT, p_c INT, p_n INT, p_lines VARCHAR(512), p_all_local INT)
BEGIN
  DECLARE v_w_tax, v_d_tax, v_disc DECIMAL(4,4);
  DECLARE v_o_id, i, v_item, v_supply, v_qty INT;
  DECLARE v_price DECIMAL(5,2);
  DECLARE v_dist CHAR(24);
  DECLARE v_line VARCHAR(64);
  {ON_ERROR}
  START TRANSACTION;
  SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w;
  UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d;
  SELECT d_next_o_id - 1, d_tax INTO v_o_id, v_d_tax FROM district WHERE d_w_id = p_w AND d_id = p_d;
  SELECT c_discount INTO v_disc FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = p_c;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    VALUES (v_o_id, p_d, p_w, p_c, CURRENT_TIMESTAMP, NULL, p_n, p_all_local);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d, p_w);
  SET i = 1;
  WHILE i <= p_n DO
    SET v_line = SUBSTRING_INDEX(SUBSTRING_INDEX(p_lines, ',', i), ',', -1);
    SET v_item = SUBSTRING_INDEX(v_line, ':', 1);
    SET v_supply = SUBSTRING_INDEX(SUBSTRING_INDEX(v_line, ':', 2), ':', -1);
    SET v_qty = SUBSTRING_INDEX(v_line, ':', -1);
    SET v_price = NULL;
    SELECT i_price INTO v_price FROM item WHERE i_id = v_item;
    IF v_price IS NULL THEN
      SIGNAL SQLSTATE '{USER_ABORT_SQLSTATE}' SET MESSAGE_TEXT = 'item is not used (intentional New-Order rollback)';
    END IF;
    UPDATE stock SET
        s_quantity = CASE WHEN s_quantity >= v_qty + 10 THEN s_quantity - v_qty ELSE s_quantity - v_qty + 91 END,
        s_ytd = s_ytd + v_qty, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + IF(v_supply <> p_w, 1, 0)
      WHERE s_i_id = v_item AND s_w_id = v_supply;
    SELECT CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
        WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07
        WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END INTO v_dist
      FROM stock WHERE s_i_id = v_item AND s_w_id = v_supply;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      VALUES (v_o_id, p_d, p_w, i, v_item, v_supply, NULL, v_qty, ROUND(v_qty * v_price, 2), v_dist);
    SET i = i + 1;
  END WHILE;
  COMMIT;
END"
        ),
        format!(
            "CREATE PROCEDURE oio_payment(p_w INT, p_d INT, p_c_w INT, p_c_d INT, p_c_id INT, p_last VARCHAR(16), p_amount DECIMAL(6,2))
BEGIN
  DECLARE v_w_name, v_d_name VARCHAR(10);
  DECLARE v_c_id, v_n INT;
  DECLARE v_credit CHAR(2);
  {ON_ERROR}
  SET v_c_id = p_c_id;
  START TRANSACTION;
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w;
  SELECT w_name INTO v_w_name FROM warehouse WHERE w_id = p_w;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d;
  SELECT d_name INTO v_d_name FROM district WHERE d_w_id = p_w AND d_id = p_d;
  IF p_last IS NOT NULL THEN
    {CUSTOMER_BY_NAME}
  END IF;
  UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
      c_payment_cnt = c_payment_cnt + 1
    WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c_id;
  SELECT c_credit INTO v_credit FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c_id;
  IF v_credit = 'BC' THEN
    UPDATE customer SET c_data = SUBSTR(CONCAT(CONCAT_WS(' ', v_c_id, p_c_d, p_c_w, p_d, p_w, p_amount), ' | ', c_data), 1, 500)
      WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c_id;
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c_id, p_c_d, p_c_w, p_d, p_w, CURRENT_TIMESTAMP, p_amount, CONCAT(v_w_name, '    ', v_d_name));
  COMMIT;
END"
        ),
        format!(
            "CREATE PROCEDURE oio_order_status(p_c_w INT, p_c_d INT, p_c_id INT, p_last VARCHAR(16))
BEGIN
  DECLARE v_c_id, v_n, v_o_id, v_lines INT;
  DECLARE v_bal DECIMAL(12,2);
  {ON_ERROR}
  SET v_c_id = p_c_id;
  START TRANSACTION;
  IF p_last IS NOT NULL THEN
    {CUSTOMER_BY_NAME}
  END IF;
  SELECT c_balance INTO v_bal FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c_id;
  SELECT o_id INTO v_o_id FROM orders WHERE o_w_id = p_c_w AND o_d_id = p_c_d AND o_c_id = v_c_id
    ORDER BY o_id DESC LIMIT 1;
  SELECT count(*) INTO v_lines FROM order_line WHERE ol_w_id = p_c_w AND ol_d_id = p_c_d AND ol_o_id = v_o_id;
  COMMIT;
END"
        ),
        format!(
            "CREATE PROCEDURE oio_delivery(p_w INT, p_carrier INT)
BEGIN
  DECLARE v_d INT DEFAULT 1;
  DECLARE v_o_id, v_c_id INT;
  DECLARE v_sum DECIMAL(12,2);
  {ON_ERROR}
  START TRANSACTION;
  WHILE v_d <= 10 DO
    SET v_o_id = NULL;
    SELECT no_o_id INTO v_o_id FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d
      ORDER BY no_o_id LIMIT 1 FOR UPDATE;
    IF v_o_id IS NOT NULL THEN
      DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o_id;
      UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o_id;
      SELECT o_c_id INTO v_c_id FROM orders WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o_id;
      UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o_id;
      SELECT coalesce(sum(ol_amount), 0) INTO v_sum FROM order_line WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o_id;
      UPDATE customer SET c_balance = c_balance + v_sum, c_delivery_cnt = c_delivery_cnt + 1
        WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c_id;
    END IF;
    SET v_d = v_d + 1;
  END WHILE;
  COMMIT;
END"
        ),
        format!(
            "CREATE PROCEDURE oio_stock_level(p_w INT, p_d INT, p_threshold INT)
BEGIN
  DECLARE v_next, v_n INT;
  {ON_ERROR}
  START TRANSACTION;
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
  SELECT count(DISTINCT s_i_id) INTO v_n FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id
    WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20 AND s_quantity < p_threshold;
  COMMIT;
END"
        ),
    ]
}

/// Creates (or replaces) the five procedures; each is sent on its own, so no client-side
/// delimiter is needed.
pub fn create_procedures(s: &mut Session) -> Result<()> {
    s.batch(&drop_procedures())?;
    for p in definitions() {
        s.batch(&p)?;
    }
    Ok(())
}

/// Runs one transaction as a procedure call.
pub fn execute(m: &mut MySession, input: &Input) -> Result<Outcome, StmtError> {
    use mysql::Value::{Bytes, Double, Int, NULL};
    let by = |b: &CustomerBy| match b {
        CustomerBy::Id(id) => (Int(*id), NULL),
        CustomerBy::Name(n) => (Int(0), Bytes(n.as_bytes().to_vec())),
    };
    // Statements are cached per connection by the client (keyed by their text).
    let (sql, params): (&str, Vec<mysql::Value>) = match input {
        Input::NewOrder {
            w_id,
            d_id,
            c_id,
            lines,
            all_local,
        } => {
            let mut text = String::with_capacity(lines.len() * 16);
            for (k, l) in lines.iter().enumerate() {
                if k > 0 {
                    text.push(',');
                }
                text.push_str(&format!("{}:{}:{}", l.i_id, l.supply_w_id, l.quantity));
            }
            (
                "CALL oio_new_order(?, ?, ?, ?, ?, ?)",
                vec![
                    Int(*w_id),
                    Int(*d_id),
                    Int(*c_id),
                    Int(lines.len() as i64),
                    Bytes(text.into_bytes()),
                    Int(*all_local as i64),
                ],
            )
        }
        Input::Payment {
            w_id,
            d_id,
            c_w_id,
            c_d_id,
            by: b,
            amount,
        } => {
            let (id, last) = by(b);
            (
                "CALL oio_payment(?, ?, ?, ?, ?, ?, ?)",
                vec![
                    Int(*w_id),
                    Int(*d_id),
                    Int(*c_w_id),
                    Int(*c_d_id),
                    id,
                    last,
                    Double(*amount),
                ],
            )
        }
        Input::OrderStatus { w_id, d_id, by: b } => {
            let (id, last) = by(b);
            (
                "CALL oio_order_status(?, ?, ?, ?)",
                vec![Int(*w_id), Int(*d_id), id, last],
            )
        }
        Input::Delivery { w_id, carrier_id } => (
            "CALL oio_delivery(?, ?)",
            vec![Int(*w_id), Int(*carrier_id)],
        ),
        Input::StockLevel {
            w_id,
            d_id,
            threshold,
        } => (
            "CALL oio_stock_level(?, ?, ?)",
            vec![Int(*w_id), Int(*d_id), Int(*threshold)],
        ),
    };
    match m
        .conn
        .exec_drop(sql, mysql::Params::Positional(params))
        .map_err(crate::mysql_session::classify)
    {
        Ok(()) => Ok(Outcome::Committed),
        Err(StmtError::UserAbort) => Ok(Outcome::RolledBack),
        Err(e) => Err(e),
    }
}
