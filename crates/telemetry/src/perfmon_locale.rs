//! Localized names of the PhysicalDisk and LogicalDisk counters perfmon writes on a
//! non-English Windows, with the number and date conventions of each display language.
//!
//! Windows keeps the display names of its counters per language in `perfc<LCID>.dat`
//! (`%SystemRoot%\System32\<lang>\` on current versions) and writes counter paths in the
//! display language of the user who records them; `relog` cannot translate them back.
//! Where two spellings are in circulation (Windows versions changed some abbreviations),
//! every one is listed; the first is the one oio writes in its own tests, and where a
//! spelling was seen in a published list it comes first.
//!
//! # Where the names come from, and which are verified
//!
//! No `perfc*.dat` / `perfh*.dat` dump and no Microsoft page listing the disk counters of a
//! localized Windows could be found with the search tools available when the table was
//! checked (November 2026), so the names were checked against public material that quotes
//! counter paths as a localized Windows shows them. The index those tools search returned
//! these files by their text but not by repository, so they are described, not linked:
//!
//! - [P1] a German PowerShell system monitor that reads
//!   `\Physikalischer Datenträger(_Total)\Lesevorgänge/Sek.` and `Schreibvorgänge/Sek.`;
//! - [P2] a PowerShell plotting script reading
//!   `\Physikalischer Datenträger(* X:)\Aktuelle Warteschlangenlänge`;
//! - [D1] Microsoft's German Azure Monitor documentation (the Log Analytics agent's table of
//!   Windows performance counters), with `\Physischer Datenträger(_Gesamt)\Lesevorgänge/s`,
//!   `Bytes gelesen/s`, `Durchschnittl. Warteschlangenlänge des Datenträgers`, `Zeit (%)`;
//! - [P3] a French PowerShell script listing every counter of a French Windows with
//!   `Get-Counter` (`\Disque physique(*)\Moyenne disque s/lecture`, `Lectures disque,
//!   octets/s`, `Moyenne disque, octets/lecture`, `Longueur moyenne de file d'attente
//!   lecture disque`, `% d'inactivité`, `Pourcentage du temps disque`, and the same for
//!   `Disque logique`);
//! - [P4], [P5] French PowerShell scripts (one by Mike F Robbins) reading
//!   `\Disque physique(*)\Taille de file d'attente du disque actuelle`;
//! - [P6] a PowerShell readiness check for disk replication with a table of
//!   `\<PhysicalDisk>(_Total)\<Disk Write Bytes/sec>` per system locale: es-ES, it-IT,
//!   fr-FR, pt-BR, pt-PT, de-DE, sv-SE, tr-TR, hu-HU, nl-NL, pl-PL, cs-CZ, ru-RU.
//!
//! A second search (November 2026, session 9) added, in the same way:
//!
//! - [G1] German Hyper-V monitoring scripts (PowerShell `Get-Counter`) reading
//!   `\Logischer Datenträger(*)\Mittlere Sek./Lesevorgänge` and `…/Schreibvorgänge`;
//!   [G2] a Python tool that translates German Hyper-V counter names to English
//!   (`mittlere sek./lesevorgänge`, `lesevorgänge/s`, `bytes gelesen/s`, the
//!   `durchschnittl. warteschlangenlänge der datenträger-lesevorgänge` queues);
//! - [E1] a Spanish counter list (`Disco físico(14 R:)\Promedio de segundos de
//!   disco/lectura`, `…/escritura`, `Transferencias de disco/s`); [E2] a Spanish PowerShell
//!   monitor (`\Disco lógico(*)\Promedio de bytes de disco/lectura`, `…/escritura`,
//!   `…/transferencia`); [E3] a PowerShell status script (`\Disco lógico(C:)\Longitud
//!   promedio de la cola de disco`); [E4] `Get-Counter` on `\disco físico(_total)\longitud
//!   actual de la cola de disco`; [E5] scripts reading `\Disco físico(_Total)\% de tiempo
//!   de disco`; [E6] a Go PDH poller with `\Disco lógico(%s)\Lecturas de disco/s`;
//! - [I1] a VB.NET drive LED (`PerformanceCounter` category `Disco logico`, counters
//!   `Letture disco/sec`, `Scritture disco/sec`); [I2] a Python monitor's Italian counter
//!   list (`\Disco fisico(*)\% Tempo disco`, `Byte scritti su disco/sec`, `Byte letti da
//!   disco/sec`);
//! - [B1] a PowerShell sampler with its pt-BR branch (`\PhysicalDisk(_Total)\Leituras de
//!   disco/s`, `Gravações de disco/s`, `Bytes de leitura de disco/s`, `Bytes de gravação de
//!   disco/s`, `Comprimento médio da fila de disco`, `Média de disco s/transferência`,
//!   `% Tempo de Disco`); [B2] a pt-BR PowerShell counter list (`Média de bytes de
//!   disco/transferência`);
//! - [J1] a PowerShell monitor for English and Japanese Windows (`\物理ディスク(*)\%
//!   ディスク タイム`);
//! - [R1] a Python script plotting a Russian `relog -f csv` file by its column names
//!   (`Скорость чтения с диска (байт/с)`, `Обращений чтения с диска/с`, `Обращений записи на
//!   диск/с`, `Процент времени бездействия`, `Текущая длина очереди диска`); [R2] a `logman
//!   create counter` batch file (`\Физический диск(*)\Средняя длина очереди диска`,
//!   `Среднее время записи на диск (с)`, `Среднее время чтения с диска (с)`); [R3] a Python
//!   collector's Russian list (`% активности диска`, the same latencies and bytes); [R4] a
//!   PowerShell script reading a perfmon CSV's `\\HOST\Физический диск(1 C:)\Обращений
//!   записи на диск/с` column; [R5] Russian notes pairing `Средняя длина очереди диска на
//!   запись` / `на чтение` with their English names.
//!
//! Machine-translated documentation (Microsoft's localized Azure pages render some counter
//! names word by word, e.g. "Longueur moyenne Longueur de file d'attente de disque") was not
//! taken as evidence. Chinese tools found call `PdhAddEnglishCounterW` to avoid localized
//! names, so no Chinese name was seen.
//!
//! What that verifies, per language, is said in a comment above each entry of [`LOCALES`]:
//! French is verified for every counter oio reads; German for the objects, rates, bytes,
//! latencies and queues but not sizes; Russian for all but sizes and the LogicalDisk object;
//! Spanish for the objects, read rate, write bytes, latencies, sizes, queue, current queue
//! and disk time; Italian and Portuguese (Brazil) for the rates and
//! bytes (and pt-BR's queue); Dutch, Polish and Swedish for the PhysicalDisk object and the
//! write bytes counter only; Japanese for the object and % Disk Time; Chinese and Korean not
//! at all. Those unverified names come from the earlier table (translation patterns) and can
//! be wrong. Corrections the checks made: French bytes/s, sizes, per-direction queues,
//! current queue and disk time were spelled otherwise than Windows writes them; Dutch and
//! Swedish write bytes, German `Durchschnittl.` queues, `/Sek.` rates and plural
//! `Mittlere Sek./Lesevorgänge` latencies were missing; Spanish sizes are `Promedio de bytes
//! de disco/lectura`; Russian rates are `Обращений чтения с диска/с`; Japanese disk time is
//! `% ディスク タイム`; pt-BR Windows keeps the English object name. The old spellings stay
//! as aliases.
//!
//! A counter whose name is not known is ignored, as in English; a file whose disk object
//! name is not known reports that no disk counters were found, naming the locales oio knows,
//! and `--locale` reads it with a given language's counter names.

/// What a disk counter measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counter {
    /// Disk Reads/sec.
    ReadIops,
    /// Disk Writes/sec.
    WriteIops,
    /// Disk Read Bytes/sec.
    ReadBps,
    /// Disk Write Bytes/sec.
    WriteBps,
    /// Avg. Disk Bytes/Read.
    ReadSize,
    /// Avg. Disk Bytes/Write.
    WriteSize,
    /// Avg. Disk sec/Read.
    ReadLat,
    /// Avg. Disk sec/Write.
    WriteLat,
    /// Avg. Disk Queue Length.
    Queue,
    /// Avg. Disk Read Queue Length.
    ReadQueue,
    /// Avg. Disk Write Queue Length.
    WriteQueue,
    /// Current Disk Queue Length.
    CurrentQueue,
    /// % Idle Time.
    IdlePct,
    /// % Disk Time.
    DiskTimePct,
}

/// The order of day, month and year in a date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateOrder {
    /// 11/23/2026 (United States).
    Mdy,
    /// 23.11.2026, 23/11/2026, 23-11-2026.
    Dmy,
    /// 2026/11/23, 2026-11-23.
    Ymd,
}

impl DateOrder {
    /// `mdy`, `dmy` or `ymd`.
    pub fn name(self) -> &'static str {
        match self {
            DateOrder::Mdy => "mdy",
            DateOrder::Dmy => "dmy",
            DateOrder::Ymd => "ymd",
        }
    }

    /// Parses `mdy`, `dmy` or `ymd` (any case).
    pub fn parse(s: &str) -> Option<DateOrder> {
        match s.to_ascii_lowercase().as_str() {
            "mdy" => Some(DateOrder::Mdy),
            "dmy" => Some(DateOrder::Dmy),
            "ymd" => Some(DateOrder::Ymd),
            _ => None,
        }
    }
}

/// One display language.
#[derive(Debug)]
pub struct Locale {
    /// BCP 47 tag (`de-DE`).
    pub tag: &'static str,
    /// English name of the language.
    pub language: &'static str,
    /// Decimal separator of the Windows default regional format.
    pub decimal_comma: bool,
    /// Date order of the Windows default short date.
    pub date_order: DateOrder,
    /// Names of the PhysicalDisk object.
    pub physical_disk: &'static [&'static str],
    /// Names of the LogicalDisk object.
    pub logical_disk: &'static [&'static str],
    /// Counter names (several spellings per counter may appear).
    pub counters: &'static [(Counter, &'static str)],
}

use Counter::*;

/// English, the language relog and typeperf also write on a system set to English.
pub const ENGLISH: &Locale = &LOCALES[0];

/// Every language oio reads; English first.
pub static LOCALES: [Locale; 13] = [
    Locale {
        tag: "en-US",
        language: "English",
        decimal_comma: false,
        date_order: DateOrder::Mdy,
        physical_disk: &["PhysicalDisk"],
        logical_disk: &["LogicalDisk"],
        counters: &[
            (ReadIops, "Disk Reads/sec"),
            (WriteIops, "Disk Writes/sec"),
            (ReadBps, "Disk Read Bytes/sec"),
            (WriteBps, "Disk Write Bytes/sec"),
            (ReadSize, "Avg. Disk Bytes/Read"),
            (WriteSize, "Avg. Disk Bytes/Write"),
            (ReadLat, "Avg. Disk sec/Read"),
            (WriteLat, "Avg. Disk sec/Write"),
            (Queue, "Avg. Disk Queue Length"),
            (ReadQueue, "Avg. Disk Read Queue Length"),
            (WriteQueue, "Avg. Disk Write Queue Length"),
            (CurrentQueue, "Current Disk Queue Length"),
            (IdlePct, "% Idle Time"),
            (DiskTimePct, "% Disk Time"),
        ],
    },
    // German. Seen in published lists [P1], [P2], [D1]: Physikalischer Datenträger,
    // Physischer Datenträger, Lesevorgänge/s, Schreibvorgänge/s, Lesevorgänge/Sek.,
    // Schreibvorgänge/Sek., Byte(s) gelesen/s, Byte(s) geschrieben/s, Durchschnittl.
    // Warteschlangenlänge des Datenträgers (and of its reads and writes), Aktuelle
    // Warteschlangenlänge, Zeit (%); in [G1], [G2]: Logischer Datenträger, Mittlere
    // Sek./Lesevorgänge and Mittlere Sek./Schreibvorgänge (plural: the singular spellings
    // the table had first were never seen). Not seen: the size names, Leerlaufzeit (%).
    Locale {
        tag: "de-DE",
        language: "German",
        decimal_comma: true,
        date_order: DateOrder::Dmy,
        physical_disk: &["Physikalischer Datenträger", "Physischer Datenträger"],
        logical_disk: &["Logischer Datenträger"],
        counters: &[
            (ReadIops, "Lesevorgänge/s"),
            (ReadIops, "Lesevorgänge/Sek."),
            (WriteIops, "Schreibvorgänge/s"),
            (WriteIops, "Schreibvorgänge/Sek."),
            (ReadBps, "Byte gelesen/s"),
            (ReadBps, "Bytes gelesen/s"),
            (WriteBps, "Byte geschrieben/s"),
            (WriteBps, "Bytes geschrieben/s"),
            (ReadSize, "Durchschn. Bytes/Lesevorgang"),
            (ReadSize, "Mittlere Bytes/Lesevorgang"),
            (WriteSize, "Durchschn. Bytes/Schreibvorgang"),
            (WriteSize, "Mittlere Bytes/Schreibvorgang"),
            (ReadLat, "Mittlere Sek./Lesevorgänge"),
            (ReadLat, "Durchschn. Datenträger s/gelesen"),
            (ReadLat, "Mittlere Sek./Lesevorgang"),
            (WriteLat, "Mittlere Sek./Schreibvorgänge"),
            (WriteLat, "Durchschn. Datenträger s/geschrieben"),
            (WriteLat, "Mittlere Sek./Schreibvorgang"),
            (Queue, "Durchschn. Warteschlangenlänge des Datenträgers"),
            (Queue, "Durchschnittl. Warteschlangenlänge des Datenträgers"),
            (Queue, "Mittlere Warteschlangenlänge des Datenträgers"),
            (
                ReadQueue,
                "Durchschn. Warteschlangenlänge der Datenträger-Lesevorgänge",
            ),
            (
                ReadQueue,
                "Durchschnittl. Warteschlangenlänge der Datenträger-Lesevorgänge",
            ),
            (
                WriteQueue,
                "Durchschn. Warteschlangenlänge der Datenträger-Schreibvorgänge",
            ),
            (
                WriteQueue,
                "Durchschnittl. Warteschlangenlänge der Datenträger-Schreibvorgänge",
            ),
            (CurrentQueue, "Aktuelle Warteschlangenlänge"),
            (IdlePct, "Leerlaufzeit (%)"),
            (DiskTimePct, "Zeit (%)"),
            (DiskTimePct, "Datenträgerzeit (%)"),
        ],
    },
    // French. Every PhysicalDisk and LogicalDisk name below that comes first was seen in a
    // Get-Counter listing of a French Windows [P3] (both objects, every counter but the
    // current queue) and in [P4], [P5] (Taille de file d'attente du disque actuelle, also
    // with a typographic apostrophe). The later spellings were not seen.
    Locale {
        tag: "fr-FR",
        language: "French",
        decimal_comma: true,
        date_order: DateOrder::Dmy,
        physical_disk: &["Disque physique"],
        logical_disk: &["Disque logique"],
        counters: &[
            (ReadIops, "Lectures disque/s"),
            (WriteIops, "Écritures disque/s"),
            (ReadBps, "Lectures disque, octets/s"),
            (ReadBps, "Octets lus du disque/s"),
            (ReadBps, "Lecture d'octets du disque/s"),
            (WriteBps, "Écritures disque, octets/s"),
            (WriteBps, "Octets écrits sur disque/s"),
            (WriteBps, "Écriture d'octets sur le disque/s"),
            (ReadSize, "Moyenne disque, octets/lecture"),
            (ReadSize, "Moyenne disque octets/lecture"),
            (WriteSize, "Moyenne disque, octets/écriture"),
            (WriteSize, "Moyenne disque octets/écriture"),
            (ReadLat, "Moyenne disque s/lecture"),
            (WriteLat, "Moyenne disque s/écriture"),
            (Queue, "Longueur moyenne de file d'attente du disque"),
            (Queue, "Long. moy. de file d'attente du disque"),
            (
                ReadQueue,
                "Longueur moyenne de file d'attente lecture disque",
            ),
            (ReadQueue, "Long. moy. de file d'attente lecture disque"),
            (
                WriteQueue,
                "Longueur moyenne de file d'attente écriture disque",
            ),
            (WriteQueue, "Long. moy. de file d'attente écriture disque"),
            (CurrentQueue, "Taille de file d'attente du disque actuelle"),
            (
                CurrentQueue,
                "Longueur actuelle de la file d'attente du disque",
            ),
            (IdlePct, "% d'inactivité"),
            (IdlePct, "% temps d'inactivité"),
            (DiskTimePct, "Pourcentage du temps disque"),
            (DiskTimePct, "% temps disque"),
            (DiskTimePct, "% du temps disque"),
        ],
    },
    // Spanish. Seen [P6]: Disco físico, Bytes de escritura en disco/s; [E1]: Promedio de
    // segundos de disco/lectura and /escritura; [E2]: Disco lógico, Promedio de bytes de
    // disco/lectura and /escritura; [E3]: Longitud promedio de la cola de disco; [E4]:
    // Longitud actual de la cola de disco; [E5]: % de tiempo de disco; [E6]: Lecturas de
    // disco/s. The rest not seen.
    Locale {
        tag: "es-ES",
        language: "Spanish",
        decimal_comma: true,
        date_order: DateOrder::Dmy,
        physical_disk: &["Disco físico"],
        logical_disk: &["Disco lógico"],
        counters: &[
            (ReadIops, "Lecturas de disco/s"),
            (WriteIops, "Escrituras en disco/s"),
            (ReadBps, "Bytes de lectura de disco/s"),
            (WriteBps, "Bytes de escritura en disco/s"),
            (ReadSize, "Promedio de bytes de disco/lectura"),
            (ReadSize, "Promedio de bytes/lectura de disco"),
            (WriteSize, "Promedio de bytes de disco/escritura"),
            (WriteSize, "Promedio de bytes/escritura de disco"),
            (ReadLat, "Promedio de segundos de disco/lectura"),
            (ReadLat, "Promedio de disco s/lectura"),
            (WriteLat, "Promedio de segundos de disco/escritura"),
            (WriteLat, "Promedio de disco s/escritura"),
            (Queue, "Longitud promedio de la cola de disco"),
            (Queue, "Longitud promedio de cola de disco"),
            (Queue, "Longitud media de la cola de disco"),
            (ReadQueue, "Longitud promedio de cola de lectura de disco"),
            (
                WriteQueue,
                "Longitud promedio de cola de escritura de disco",
            ),
            (CurrentQueue, "Longitud actual de la cola de disco"),
            (IdlePct, "% de tiempo de inactividad"),
            (DiskTimePct, "% de tiempo de disco"),
        ],
    },
    // Italian. Seen [P6]: Disco fisico, Byte scritti su disco/sec; [I1]: Disco logico,
    // Letture disco/sec, Scritture disco/sec; [I2]: Disco fisico, % Tempo disco, Byte letti
    // da disco/sec, Byte scritti su disco/sec. The latency, size and queue names not seen.
    Locale {
        tag: "it-IT",
        language: "Italian",
        decimal_comma: true,
        date_order: DateOrder::Dmy,
        physical_disk: &["Disco fisico"],
        logical_disk: &["Disco logico"],
        counters: &[
            (ReadIops, "Letture disco/sec"),
            (WriteIops, "Scritture disco/sec"),
            (ReadBps, "Byte letti da disco/sec"),
            (WriteBps, "Byte scritti su disco/sec"),
            (ReadSize, "Media byte/lettura disco"),
            (WriteSize, "Media byte/scrittura disco"),
            (ReadLat, "Media sec/lettura disco"),
            (WriteLat, "Media sec/scrittura disco"),
            (Queue, "Lunghezza media coda del disco"),
            (ReadQueue, "Lunghezza media coda lettura disco"),
            (WriteQueue, "Lunghezza media coda scrittura disco"),
            (CurrentQueue, "Lunghezza corrente coda del disco"),
            (IdlePct, "% tempo di inattività"),
            (DiskTimePct, "% tempo disco"),
        ],
    },
    // Portuguese (Brazil). Seen [P6]: Bytes de gravação de disco/s, under the object name
    // PhysicalDisk (English): English object names are accepted in every locale, and the
    // counter names detect the language. [B1] (PhysicalDisk too):
    // Leituras de disco/s, Gravações de disco/s, Bytes de leitura de disco/s, Bytes de
    // gravação de disco/s, Comprimento médio da fila de disco, % Tempo de Disco, and Média
    // de disco s/transferência (the pattern of the read and write latency names below);
    // [B2]: Média de bytes de disco/transferência (the pattern of the size names). The
    // latency and size names themselves and the Disco Físico objects not seen.
    Locale {
        tag: "pt-BR",
        language: "Portuguese (Brazil)",
        decimal_comma: true,
        date_order: DateOrder::Dmy,
        physical_disk: &["Disco Físico"],
        logical_disk: &["Disco Lógico"],
        counters: &[
            (ReadIops, "Leituras de disco/s"),
            (WriteIops, "Gravações de disco/s"),
            (ReadBps, "Bytes de leitura de disco/s"),
            (WriteBps, "Bytes de gravação de disco/s"),
            (ReadSize, "Média de bytes de disco/leitura"),
            (WriteSize, "Média de bytes de disco/gravação"),
            (ReadLat, "Média de disco s/leitura"),
            (WriteLat, "Média de disco s/gravação"),
            (Queue, "Comprimento médio da fila de disco"),
            (ReadQueue, "Comprimento médio da fila de leitura do disco"),
            (WriteQueue, "Comprimento médio da fila de gravação do disco"),
            (CurrentQueue, "Comprimento atual da fila de disco"),
            (IdlePct, "% tempo ocioso"),
            (DiskTimePct, "% tempo de disco"),
        ],
    },
    // Japanese. Seen [J1]: 物理ディスク, % ディスク タイム (katakana, as the processor's
    // % プロセッサ タイム). The rest not seen.
    Locale {
        tag: "ja-JP",
        language: "Japanese",
        decimal_comma: false,
        date_order: DateOrder::Ymd,
        physical_disk: &["物理ディスク"],
        logical_disk: &["論理ディスク"],
        counters: &[
            (ReadIops, "ディスク読み取り/秒"),
            (WriteIops, "ディスク書き込み/秒"),
            (ReadBps, "ディスク読み取りバイト/秒"),
            (WriteBps, "ディスク書き込みバイト/秒"),
            (ReadSize, "平均ディスク バイト/読み取り"),
            (WriteSize, "平均ディスク バイト/書き込み"),
            (ReadLat, "平均ディスク秒/読み取り"),
            (WriteLat, "平均ディスク秒/書き込み"),
            (Queue, "平均ディスク キュー長"),
            (ReadQueue, "平均ディスク読み取りキュー長"),
            (WriteQueue, "平均ディスク書き込みキュー長"),
            (CurrentQueue, "現在のディスク キュー長"),
            (IdlePct, "% アイドル時間"),
            (DiskTimePct, "% ディスク タイム"),
            (DiskTimePct, "% ディスク時間"),
        ],
    },
    // Chinese (Simplified): no real export or script with these names was found (Chinese
    // tools use PdhAddEnglishCounterW to avoid them); every name is unverified.
    Locale {
        tag: "zh-CN",
        language: "Chinese (Simplified)",
        decimal_comma: false,
        date_order: DateOrder::Ymd,
        physical_disk: &["物理磁盘"],
        logical_disk: &["逻辑磁盘"],
        counters: &[
            (ReadIops, "磁盘读取/秒"),
            (WriteIops, "磁盘写入/秒"),
            (ReadBps, "磁盘读取字节/秒"),
            (WriteBps, "磁盘写入字节/秒"),
            (ReadSize, "平均磁盘字节/读取"),
            (WriteSize, "平均磁盘字节/写入"),
            (ReadLat, "平均磁盘秒/读取"),
            (WriteLat, "平均磁盘秒/写入"),
            (Queue, "平均磁盘队列长度"),
            (ReadQueue, "平均磁盘读取队列长度"),
            (WriteQueue, "平均磁盘写入队列长度"),
            (CurrentQueue, "当前磁盘队列长度"),
            (IdlePct, "% 空闲时间"),
            (DiskTimePct, "% 磁盘时间"),
        ],
    },
    // Korean: not seen in any published list here; every name is unverified.
    Locale {
        tag: "ko-KR",
        language: "Korean",
        decimal_comma: false,
        date_order: DateOrder::Ymd,
        physical_disk: &["실제 디스크"],
        logical_disk: &["논리 디스크"],
        counters: &[
            (ReadIops, "디스크 읽기/초"),
            (WriteIops, "디스크 쓰기/초"),
            (ReadBps, "디스크 읽기 바이트/초"),
            (WriteBps, "디스크 쓰기 바이트/초"),
            (ReadSize, "평균 디스크 바이트/읽기"),
            (WriteSize, "평균 디스크 바이트/쓰기"),
            (ReadLat, "평균 디스크 초/읽기"),
            (WriteLat, "평균 디스크 초/쓰기"),
            (Queue, "평균 디스크 큐 길이"),
            (ReadQueue, "평균 디스크 읽기 큐 길이"),
            (WriteQueue, "평균 디스크 쓰기 큐 길이"),
            (CurrentQueue, "현재 디스크 큐 길이"),
            (IdlePct, "% 유휴 시간"),
            (DiskTimePct, "% 디스크 시간"),
        ],
    },
    // Russian. Seen [P6]: Физический диск, Скорость записи на диск (байт/с); [R1] (a relog
    // CSV read by its column names): Скорость чтения с диска (байт/с), Обращений чтения с
    // диска/с, Обращений записи на диск/с, Процент времени бездействия, Текущая длина очереди
    // диска; [R2] (logman): Средняя длина очереди диска, Среднее время чтения с диска (с),
    // Среднее время записи на диск (с); [R3]: % активности диска; [R4] (a relog CSV's
    // column): Обращений записи на диск/с; [R5]: Средняя длина очереди диска на чтение and
    // на запись. The size names and Логический диск not seen.
    Locale {
        tag: "ru-RU",
        language: "Russian",
        decimal_comma: true,
        date_order: DateOrder::Dmy,
        physical_disk: &["Физический диск"],
        logical_disk: &["Логический диск"],
        counters: &[
            (ReadIops, "Обращений чтения с диска/с"),
            (ReadIops, "Обращений к диску на чтение/с"),
            (WriteIops, "Обращений записи на диск/с"),
            (WriteIops, "Обращений к диску на запись/с"),
            (ReadBps, "Скорость чтения с диска (байт/с)"),
            (WriteBps, "Скорость записи на диск (байт/с)"),
            (ReadSize, "Среднее байт при чтении с диска"),
            (WriteSize, "Среднее байт при записи на диск"),
            (ReadLat, "Среднее время чтения с диска (с)"),
            (WriteLat, "Среднее время записи на диск (с)"),
            (Queue, "Средняя длина очереди диска"),
            (ReadQueue, "Средняя длина очереди диска на чтение"),
            (ReadQueue, "Средняя длина очереди чтения диска"),
            (WriteQueue, "Средняя длина очереди диска на запись"),
            (WriteQueue, "Средняя длина очереди записи на диск"),
            (CurrentQueue, "Текущая длина очереди диска"),
            (IdlePct, "Процент времени бездействия"),
            (IdlePct, "% времени бездействия"),
            (DiskTimePct, "% активности диска"),
        ],
    },
    // Dutch. Seen [P6]: Fysieke schijf, Geschreven bytes per seconde. The rest not seen.
    Locale {
        tag: "nl-NL",
        language: "Dutch",
        decimal_comma: true,
        date_order: DateOrder::Dmy,
        physical_disk: &["Fysieke schijf"],
        logical_disk: &["Logische schijf"],
        counters: &[
            (ReadIops, "Leesbewerkingen/sec"),
            (WriteIops, "Schrijfbewerkingen/sec"),
            (ReadBps, "Gelezen bytes/sec"),
            (WriteBps, "Geschreven bytes/sec"),
            (WriteBps, "Geschreven bytes per seconde"),
            (ReadSize, "Gem. aantal bytes per leesbewerking"),
            (WriteSize, "Gem. aantal bytes per schrijfbewerking"),
            (ReadLat, "Gem. aantal sec. per leesbewerking"),
            (WriteLat, "Gem. aantal sec. per schrijfbewerking"),
            (Queue, "Gem. lengte van wachtrij voor schijf"),
            (ReadQueue, "Gem. lengte van wachtrij voor lezen"),
            (WriteQueue, "Gem. lengte van wachtrij voor schrijven"),
            (CurrentQueue, "Huidige lengte van wachtrij voor schijf"),
            (IdlePct, "% inactieve tijd"),
            (DiskTimePct, "% schijftijd"),
        ],
    },
    // Polish. Seen [P6]: Dysk fizyczny, Bajty zapisu dysku/s. The rest not seen.
    Locale {
        tag: "pl-PL",
        language: "Polish",
        decimal_comma: true,
        date_order: DateOrder::Dmy,
        physical_disk: &["Dysk fizyczny"],
        logical_disk: &["Dysk logiczny"],
        counters: &[
            (ReadIops, "Odczyty dysku/s"),
            (WriteIops, "Zapisy dysku/s"),
            (ReadBps, "Bajty odczytu dysku/s"),
            (WriteBps, "Bajty zapisu dysku/s"),
            (ReadSize, "Średnia liczba bajtów dysku/odczyt"),
            (WriteSize, "Średnia liczba bajtów dysku/zapis"),
            (ReadLat, "Średni czas dysku/odczyt"),
            (WriteLat, "Średni czas dysku/zapis"),
            (Queue, "Średnia długość kolejki dysku"),
            (ReadQueue, "Średnia długość kolejki odczytu dysku"),
            (WriteQueue, "Średnia długość kolejki zapisu dysku"),
            (CurrentQueue, "Bieżąca długość kolejki dysku"),
            (IdlePct, "Czas bezczynności (%)"),
            (DiskTimePct, "Czas dysku (%)"),
        ],
    },
    // Swedish. Seen [P6]: Fysisk disk, Disk - skrivna byte/s. The rest not seen.
    Locale {
        tag: "sv-SE",
        language: "Swedish",
        decimal_comma: true,
        date_order: DateOrder::Ymd,
        physical_disk: &["Fysisk disk"],
        logical_disk: &["Logisk disk"],
        counters: &[
            (ReadIops, "Diskläsningar/sek"),
            (WriteIops, "Diskskrivningar/sek"),
            (ReadBps, "Lästa byte/sek"),
            (WriteBps, "Skrivna byte/sek"),
            (WriteBps, "Disk - skrivna byte/s"),
            (ReadSize, "Genomsnittligt antal byte/läsning"),
            (WriteSize, "Genomsnittligt antal byte/skrivning"),
            (ReadLat, "Genomsnittlig tid/läsning (sek)"),
            (WriteLat, "Genomsnittlig tid/skrivning (sek)"),
            (Queue, "Genomsnittlig diskkölängd"),
            (ReadQueue, "Genomsnittlig kölängd för diskläsning"),
            (WriteQueue, "Genomsnittlig kölängd för diskskrivning"),
            (CurrentQueue, "Aktuell diskkölängd"),
            (IdlePct, "% inaktiv tid"),
            (DiskTimePct, "% disktid"),
        ],
    },
];

/// Names compared without case, without dots (the seed writes `Avg Disk Bytes/Read`) and
/// with runs of spaces made one.
pub fn normalize(name: &str) -> String {
    // Windows and scripts copied from it write both ' and ’ in French names.
    name.to_lowercase()
        .replace('\u{2019}', "'")
        .replace('.', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `object` names a disk object in `loc` (PhysicalDisk or LogicalDisk).
pub fn is_disk_object(loc: &Locale, object: &str) -> bool {
    let n = normalize(object);
    loc.physical_disk
        .iter()
        .chain(loc.logical_disk)
        .any(|o| normalize(o) == n)
}

/// The locale whose disk object names include `object`; English first.
pub fn locale_of_object(object: &str) -> Option<&'static Locale> {
    LOCALES.iter().find(|l| is_disk_object(l, object))
}

/// The counter `name` is in `loc`, or in English (localized systems keep some English names).
pub fn counter_of(loc: &Locale, name: &str) -> Option<Counter> {
    let n = normalize(name);
    [loc, ENGLISH]
        .iter()
        .flat_map(|l| l.counters.iter())
        .find(|(_, c)| normalize(c) == n)
        .map(|(f, _)| *f)
}

/// The locale of a tag (`de`, `de-DE`, any case).
pub fn by_tag(tag: &str) -> Option<&'static Locale> {
    let t = tag.to_ascii_lowercase();
    LOCALES.iter().find(|l| {
        let lt = l.tag.to_ascii_lowercase();
        lt == t || lt.split('-').next() == Some(t.as_str())
    })
}

/// The first (primary) name of `counter` in `loc`.
pub fn name_of(loc: &Locale, counter: Counter) -> &'static str {
    loc.counters
        .iter()
        .find(|(c, _)| *c == counter)
        .map(|(_, n)| *n)
        .unwrap_or("")
}

/// All tags, for messages.
pub fn tags() -> String {
    LOCALES.iter().map(|l| l.tag).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_locale_names_every_counter_once_per_spelling() {
        let all = [
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
        ];
        for l in &LOCALES {
            for c in all {
                assert!(!name_of(l, c).is_empty(), "{} lacks {c:?}", l.tag);
            }
            // No spelling may mean two counters: a file would be read wrongly.
            for (i, (c1, n1)) in l.counters.iter().enumerate() {
                for (c2, n2) in &l.counters[i + 1..] {
                    assert!(
                        normalize(n1) != normalize(n2) || c1 == c2,
                        "{}: {n1}",
                        l.tag
                    );
                }
                assert_eq!(counter_of(l, n1), Some(*c1), "{}: {n1}", l.tag);
            }
        }
        assert_eq!(
            locale_of_object("Physikalischer Datenträger").unwrap().tag,
            "de-DE"
        );
        assert_eq!(locale_of_object("DISQUE LOGIQUE").unwrap().tag, "fr-FR");
        assert_eq!(by_tag("pt").unwrap().tag, "pt-BR");
    }

    #[test]
    fn names_seen_on_localized_windows_are_read() {
        let fr = by_tag("fr").unwrap();
        let de = by_tag("de").unwrap();
        for (name, want) in [
            ("Lectures disque, octets/s", ReadBps),
            ("Moyenne disque, octets/écriture", WriteSize),
            (
                "Longueur moyenne de file d'attente écriture disque",
                WriteQueue,
            ),
            // The typographic apostrophe, as [P5] has it.
            (
                "taille de file d\u{2019}attente du disque actuelle",
                CurrentQueue,
            ),
            ("% d\u{2019}inactivité", IdlePct),
            ("Pourcentage du temps disque", DiskTimePct),
        ] {
            assert_eq!(counter_of(fr, name), Some(want), "{name}");
        }
        assert_eq!(counter_of(de, "Lesevorgänge/Sek."), Some(ReadIops));
        assert_eq!(
            counter_of(de, "Durchschnittl. Warteschlangenlänge des Datenträgers"),
            Some(Queue)
        );
        assert_eq!(
            locale_of_object("Physischer Datenträger").unwrap().tag,
            "de-DE"
        );
        // The names oio writes in its tests are the verified ones where there are any.
        assert_eq!(name_of(fr, ReadBps), "Lectures disque, octets/s");
        assert_eq!(
            name_of(fr, CurrentQueue),
            "Taille de file d'attente du disque actuelle"
        );
    }
}
