//! One perfmon file per display language, its header made of the counter names seen on that
//! language's Windows (the sources are listed in `src/perfmon_locale.rs`: the tag after each
//! name here). Every column must be read into its field, and the language detected from
//! the names alone.
//!
//! The rows are written as `relog -f csv` writes them on those systems, as far as the
//! sources show: dates month first (a Russian relog file read by its own script parses
//! `%m/%d/%Y`) and decimal points.

use oio_core::observation::{DeviceInterval, Observation};
use oio_telemetry::perfmon;

/// What a counter measures, as the test checks it in the interval.
#[derive(Clone, Copy, Debug)]
enum F {
    ReadIops,
    WriteIops,
    ReadBps,
    WriteBps,
    ReadSize,
    WriteSize,
    ReadLat,
    WriteLat,
    Queue,
    ReadQueue,
    WriteQueue,
    CurrentQueue,
    IdlePct,
    DiskTimePct,
}

/// A distinct value per field, so that a column read into the wrong field shows.
fn value(f: F) -> f64 {
    match f {
        F::ReadIops => 120.0,
        F::WriteIops => 40.0,
        F::ReadBps => 983_040.0,
        F::WriteBps => 655_360.0,
        F::ReadSize => 8192.0,
        F::WriteSize => 16384.0,
        F::ReadLat => 0.004,
        F::WriteLat => 0.007,
        F::Queue => 0.75,
        F::ReadQueue => 0.5,
        F::WriteQueue => 0.25,
        F::CurrentQueue => 2.0,
        F::IdlePct => 70.0,
        F::DiskTimePct => 35.0,
    }
}

/// The field `f` reads into, as stored.
fn stored(iv: &DeviceInterval, f: F) -> Option<f64> {
    match f {
        F::ReadIops => iv.read.iops,
        F::WriteIops => iv.write.iops,
        F::ReadBps => iv.read.bytes_per_sec,
        F::WriteBps => iv.write.bytes_per_sec,
        F::ReadSize => iv.read.mean_io_bytes,
        F::WriteSize => iv.write.mean_io_bytes,
        F::ReadLat => iv.read.latency_mean_ns.map(|n| n / 1e9),
        F::WriteLat => iv.write.latency_mean_ns.map(|n| n / 1e9),
        F::Queue => iv.queue_mean,
        F::ReadQueue => iv.read.queue_mean,
        F::WriteQueue => iv.write.queue_mean,
        F::CurrentQueue => iv.queue_current,
        F::IdlePct => iv.util_pct.map(|u| 100.0 - u),
        // % Idle Time wins over % Disk Time where both are given.
        F::DiskTimePct => iv.util_pct,
    }
}

/// A relog-style CSV of `\\HOST\object(instance)\counter` columns: a first row without
/// rates, then two one-second samples.
fn export(object: &str, counters: &[(&str, F)]) -> String {
    let mut s = String::from("\"(PDH-CSV 4.0) (Coordinated Universal Time)(0)\"");
    for (c, _) in counters {
        s.push_str(&format!(",\"\\\\HOST\\{object}(0 C:)\\{c}\""));
    }
    s.push_str("\r\n\"11/23/2026 13:00:00.000\"");
    s.push_str(&",\" \"".repeat(counters.len()));
    s.push_str("\r\n");
    for t in 1..=2 {
        s.push_str(&format!("\"11/23/2026 13:00:0{t}.000\""));
        for (_, f) in counters {
            s.push_str(&format!(",\"{}\"", value(*f)));
        }
        s.push_str("\r\n");
    }
    s
}

/// Parses the export, checks the locale found and every column's value.
fn reads(tag: &str, object: &str, counters: &[(&str, F)]) -> Observation {
    let obs =
        perfmon::parse("p.csv", &export(object, counters)).unwrap_or_else(|e| panic!("{tag}: {e}"));
    let locale = obs.source.locale.clone().unwrap_or_default();
    assert!(locale.starts_with(tag), "{tag}: detected {locale}");
    let unread: Vec<&String> = obs
        .envelope
        .warnings
        .iter()
        .filter(|w| w.contains("does not recognise"))
        .collect();
    assert!(unread.is_empty(), "{tag}: {unread:#?}");
    assert_eq!(obs.devices.len(), 1, "{tag}");
    let d = &obs.devices[0];
    assert_eq!(d.name, format!("{object}(0 C:)"));
    // A sample is an interval when it has I/O rates or a queue (the parser's rule).
    let rates = counters
        .iter()
        .any(|(_, f)| matches!(f, F::ReadIops | F::WriteIops | F::Queue));
    if rates {
        assert_eq!(d.intervals.len(), 2, "{tag}");
        let iv = &d.intervals[1];
        for (c, f) in counters {
            let want = value(*f);
            let got = stored(iv, *f).unwrap_or_else(|| panic!("{tag}: {c} not read"));
            assert!(
                (got - want).abs() < 1e-9 * want.max(1.0),
                "{tag}: {c} = {got}, expected {want}"
            );
        }
    }
    obs
}

#[test]
fn german() {
    // [G1], [G2] (latency), [P1] (rates), [D1] (bytes, queues, Zeit (%)).
    reads(
        "de-DE",
        "Physikalischer Datenträger",
        &[
            ("Lesevorgänge/s", F::ReadIops),
            ("Schreibvorgänge/s", F::WriteIops),
            ("Bytes gelesen/s", F::ReadBps),
            ("Bytes geschrieben/s", F::WriteBps),
            ("Mittlere Sek./Lesevorgänge", F::ReadLat),
            ("Mittlere Sek./Schreibvorgänge", F::WriteLat),
            (
                "Durchschnittl. Warteschlangenlänge des Datenträgers",
                F::Queue,
            ),
            (
                "Durchschnittl. Warteschlangenlänge der Datenträger-Lesevorgänge",
                F::ReadQueue,
            ),
            (
                "Durchschnittl. Warteschlangenlänge der Datenträger-Schreibvorgänge",
                F::WriteQueue,
            ),
            ("Aktuelle Warteschlangenlänge", F::CurrentQueue),
            ("Zeit (%)", F::DiskTimePct),
        ],
    );
    // [G1]'s LogicalDisk object, with [P1]'s /Sek. spellings.
    reads(
        "de-DE",
        "Logischer Datenträger",
        &[
            ("Lesevorgänge/Sek.", F::ReadIops),
            ("Schreibvorgänge/Sek.", F::WriteIops),
            ("Mittlere Sek./Lesevorgänge", F::ReadLat),
            ("Mittlere Sek./Schreibvorgänge", F::WriteLat),
        ],
    );
}

#[test]
fn french() {
    // [P3] (every counter but the current queue), [P4] (the current queue).
    for object in ["Disque physique", "Disque logique"] {
        reads(
            "fr-FR",
            object,
            &[
                ("Lectures disque/s", F::ReadIops),
                ("Écritures disque/s", F::WriteIops),
                ("Lectures disque, octets/s", F::ReadBps),
                ("Écritures disque, octets/s", F::WriteBps),
                ("Moyenne disque, octets/lecture", F::ReadSize),
                ("Moyenne disque, octets/écriture", F::WriteSize),
                ("Moyenne disque s/lecture", F::ReadLat),
                ("Moyenne disque s/écriture", F::WriteLat),
                ("Longueur moyenne de file d'attente du disque", F::Queue),
                (
                    "Longueur moyenne de file d'attente lecture disque",
                    F::ReadQueue,
                ),
                (
                    "Longueur moyenne de file d'attente écriture disque",
                    F::WriteQueue,
                ),
                (
                    "Taille de file d'attente du disque actuelle",
                    F::CurrentQueue,
                ),
                ("% d'inactivité", F::IdlePct),
            ],
        );
    }
}

#[test]
fn spanish() {
    // [E6], [P6], [E1], [E3], [E4], [E5] on the physical disk; [E2] on the logical one.
    reads(
        "es-ES",
        "Disco físico",
        &[
            ("Lecturas de disco/s", F::ReadIops),
            ("Bytes de escritura en disco/s", F::WriteBps),
            ("Promedio de segundos de disco/lectura", F::ReadLat),
            ("Promedio de segundos de disco/escritura", F::WriteLat),
            ("Longitud promedio de la cola de disco", F::Queue),
            ("Longitud actual de la cola de disco", F::CurrentQueue),
            ("% de tiempo de disco", F::DiskTimePct),
        ],
    );
    reads(
        "es-ES",
        "Disco lógico",
        &[
            ("Lecturas de disco/s", F::ReadIops),
            ("Promedio de bytes de disco/lectura", F::ReadSize),
            ("Promedio de bytes de disco/escritura", F::WriteSize),
            ("Longitud promedio de la cola de disco", F::Queue),
        ],
    );
}

#[test]
fn italian() {
    // [I2] and [P6] on the physical disk, [I1] on the logical one.
    reads(
        "it-IT",
        "Disco fisico",
        &[
            ("Byte letti da disco/sec", F::ReadBps),
            ("Byte scritti su disco/sec", F::WriteBps),
            ("% Tempo disco", F::DiskTimePct),
        ],
    );
    reads(
        "it-IT",
        "Disco logico",
        &[
            ("Letture disco/sec", F::ReadIops),
            ("Scritture disco/sec", F::WriteIops),
        ],
    );
}

#[test]
fn portuguese_brazil_keeps_the_english_object_name() {
    // [B1] and [P6]: pt-BR Windows writes PhysicalDisk with Portuguese counter names; the
    // counters decide the language.
    reads(
        "pt-BR",
        "PhysicalDisk",
        &[
            ("Leituras de disco/s", F::ReadIops),
            ("Gravações de disco/s", F::WriteIops),
            ("Bytes de leitura de disco/s", F::ReadBps),
            ("Bytes de gravação de disco/s", F::WriteBps),
            ("Comprimento médio da fila de disco", F::Queue),
            ("% Tempo de Disco", F::DiskTimePct),
        ],
    );
}

#[test]
fn japanese() {
    // [J1]: only the object and % Disk Time were seen; a file of it alone has no rates, so
    // the column is checked as read and the language as detected.
    let obs = reads(
        "ja-JP",
        "物理ディスク",
        &[("% ディスク タイム", F::DiskTimePct)],
    );
    assert!(
        obs.envelope
            .warnings
            .iter()
            .any(|w| w.contains("rate counters")),
        "{:#?}",
        obs.envelope.warnings
    );
}

#[test]
fn russian() {
    // [R1], [R2], [R3], [R5]; [R4] read the write rate from a real file's column.
    reads(
        "ru-RU",
        "Физический диск",
        &[
            ("Обращений чтения с диска/с", F::ReadIops),
            ("Обращений записи на диск/с", F::WriteIops),
            ("Скорость чтения с диска (байт/с)", F::ReadBps),
            ("Скорость записи на диск (байт/с)", F::WriteBps),
            ("Среднее время чтения с диска (с)", F::ReadLat),
            ("Среднее время записи на диск (с)", F::WriteLat),
            ("Средняя длина очереди диска", F::Queue),
            ("Средняя длина очереди диска на чтение", F::ReadQueue),
            ("Средняя длина очереди диска на запись", F::WriteQueue),
            ("Текущая длина очереди диска", F::CurrentQueue),
            ("Процент времени бездействия", F::IdlePct),
        ],
    );
    reads(
        "ru-RU",
        "Физический диск",
        &[
            ("Обращений чтения с диска/с", F::ReadIops),
            ("% активности диска", F::DiskTimePct),
        ],
    );
}

/// A disk counter with a name oio does not know (an abbreviation no source showed, here) is
/// named in a warning with its whole header, and the columns it knows are still read.
#[test]
fn an_unknown_localized_counter_is_named() {
    let obs = perfmon::parse(
        "p.csv",
        &export(
            "Physikalischer Datenträger",
            &[
                ("Lesevorgänge/s", F::ReadIops),
                ("Mittl. Sek./Lesen", F::ReadLat),
            ],
        ),
    )
    .unwrap();
    let w = obs.envelope.warnings.join("\n");
    assert!(
        w.contains(r#"column "\\HOST\Physikalischer Datenträger(0 C:)\Mittl. Sek./Lesen": a disk counter oio does not recognise (in German or English), not read"#),
        "{w}"
    );
    assert_eq!(obs.devices[0].intervals[1].read.iops, Some(120.0));
    assert_eq!(obs.devices[0].intervals[1].read.latency_mean_ns, None);
}
