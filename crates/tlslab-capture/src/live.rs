//! Live capture: the IP packets passing this machine's interfaces as they pass, each with
//! the kernel's receive timestamp, from an AF_PACKET socket (nix: rustix cannot read the
//! timestamp control messages). Datagram sockets hand over packets without their link
//! header, so every interface (Ethernet, loopback, tun) gives plain IP, written to pcap
//! files as raw IP. Needs root or CAP_NET_RAW, like tcpdump.
//!
//! The socket belongs to the network namespace of the thread that opens it: the engine opens
//! one inside the client's namespace to record a run's own packets.

use std::fs::File;
use std::io::IoSliceMut;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use byteorder_slice::NativeEndian;
use nix::errno::Errno;
use nix::libc;
use nix::sys::socket::{
    bind, recvmsg, setsockopt, socket, sockopt, AddressFamily, ControlMessageOwned, LinkAddr,
    MsgFlags, SockFlag, SockType, SockaddrLike,
};
use nix::sys::time::TimeVal;
use pcap_file::pcap::{PcapHeader, PcapPacket};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::filter::Filter;
use crate::packets::CaptureError;

/// Attaches `filter`'s program to `socket`. nix has no socket option for it: a classic BPF
/// program is handed to setsockopt as a `sock_fprog`.
fn attach(socket: &OwnedFd, filter: &Filter) -> Result<(), CaptureError> {
    let mut instructions = filter.kernel_instructions();
    let program = libc::sock_fprog {
        len: instructions.len() as u16,
        filter: instructions.as_mut_ptr(),
    };
    // SAFETY: `program` points at `instructions`, both alive for the call; the kernel copies
    // the program and checks every instruction before it runs one.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&program as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if result != 0 {
        return Err(CaptureError::new(
            format!(
                "cannot attach --filter '{}' to the capture",
                filter.expression()
            ),
            "the kernel refused libpcap's program; report the expression as a tlslab bug",
        )
        .caused_by(Errno::last()));
    }
    Ok(())
}

/// The largest IP packet.
const LARGEST_PACKET: usize = 65_535;

/// How long a read waits before it returns empty-handed, so a caller can look at its stop
/// flag (and flush what it writes).
const READ_TIMEOUT: Duration = Duration::from_millis(100);

/// `sll_pkttype` of a packet this machine sent, and `sll_hatype` of a loopback device:
/// loopback shows every packet twice, once sent and once received; the received copy is
/// kept (as libpcap does).
const PACKET_OUTGOING: u8 = 4;
const ARPHRD_LOOPBACK: u16 = 772;

/// An open live capture.
pub struct Live {
    socket: OwnedFd,
    buffer: Vec<u8>,
    control: Vec<u8>,
    /// Packets the kernel dropped are not counted here; packets longer than the buffer are.
    pub truncated: u64,
}

/// One captured IP packet.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// Kernel receive time, nanoseconds since the Unix epoch.
    pub timestamp_ns: u64,
    /// The interface's index.
    pub interface: u32,
    /// The IP packet (IPv4 or IPv6), as much of it as was read.
    pub data: &'a [u8],
    /// Its whole length.
    pub length: usize,
}

fn failed(what: &str, error: Errno) -> CaptureError {
    let hint = match error {
        Errno::EPERM | Errno::EACCES => {
            "capturing needs root or CAP_NET_RAW (setcap cap_net_raw+ep on the binary)"
        }
        Errno::ENODEV | Errno::ENXIO => "`ip link` lists the interfaces; `any` captures them all",
        _ => "check that the interface exists and is up",
    };
    CaptureError::new(format!("cannot {what}"), hint).caused_by(error)
}

impl Live {
    /// Opens a capture of `interface` (every interface for `None` or `any`).
    pub fn open(interface: Option<&str>) -> Result<Live, CaptureError> {
        Live::open_filtered(interface, None)
    }

    /// Opens a capture of `interface` that receives only the packets `filter` passes: the
    /// kernel runs the program (SO_ATTACH_FILTER) on each packet's IP header onwards, as a
    /// datagram packet socket presents it, and never copies the others.
    pub fn open_filtered(
        interface: Option<&str>,
        filter: Option<&Filter>,
    ) -> Result<Live, CaptureError> {
        // Protocol 0: the socket receives nothing until it is bound below, so no packet
        // arrives before the filter is attached (one opened with ETH_P_ALL would queue
        // packets unfiltered in between).
        let socket = socket(
            AddressFamily::Packet,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(|error| failed("open a packet socket", error))?;
        if let Some(filter) = filter {
            attach(&socket, filter)?;
        }
        let (index, name) = match interface.filter(|name| *name != "any") {
            Some(name) => (
                nix::net::if_::if_nametoindex(name)
                    .map_err(|error| failed(&format!("find the interface {name}"), error))?,
                name,
            ),
            // Index 0 binds to every interface.
            None => (0, "any"),
        };
        // SAFETY: an all-zero sockaddr_ll is a valid value of that plain C struct.
        let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        address.sll_family = libc::AF_PACKET as u16;
        address.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        address.sll_ifindex = index as i32;
        // SAFETY: the pointer and length describe the sockaddr_ll above, alive here.
        let link = unsafe {
            LinkAddr::from_raw(
                (&address as *const libc::sockaddr_ll).cast(),
                Some(std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t),
            )
        }
        .ok_or_else(|| failed(&format!("address the interface {name}"), Errno::EINVAL))?;
        bind(socket.as_raw_fd(), &link)
            .map_err(|error| failed(&format!("capture on {name}"), error))?;
        setsockopt(&socket, sockopt::ReceiveTimestampns, &true)
            .map_err(|error| failed("ask for receive timestamps", error))?;
        let timeout = TimeVal::new(0, READ_TIMEOUT.as_micros() as libc::suseconds_t);
        setsockopt(&socket, sockopt::ReceiveTimeout, &timeout)
            .map_err(|error| failed("set the read timeout", error))?;
        // A large buffer keeps bursts (thousands of handshakes a second) from being dropped;
        // beyond the system's limit only root may go, and less is still a capture.
        let buffer_bytes = 32 << 20;
        if setsockopt(&socket, sockopt::RcvBufForce, &buffer_bytes).is_err() {
            let _ = setsockopt(&socket, sockopt::RcvBuf, &buffer_bytes);
        }
        Ok(Live {
            socket,
            buffer: vec![0; LARGEST_PACKET],
            control: nix::cmsg_space!(nix::sys::time::TimeSpec),
            truncated: 0,
        })
    }

    /// The next IP packet, or `None` when none came for a while (100 ms).
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        loop {
            let (length, timestamp_ns, interface) = {
                let mut iov = [IoSliceMut::new(&mut self.buffer)];
                let message = match recvmsg::<LinkAddr>(
                    self.socket.as_raw_fd(),
                    &mut iov,
                    Some(&mut self.control),
                    MsgFlags::MSG_TRUNC,
                ) {
                    Ok(message) => message,
                    Err(Errno::EAGAIN | Errno::EINTR) => return Ok(None),
                    Err(error) => return Err(failed("read the capture", error)),
                };
                let Some(address) = message.address else {
                    continue;
                };
                if address.pkttype() == PACKET_OUTGOING && address.hatype() == ARPHRD_LOOPBACK {
                    continue;
                }
                let protocol = u16::from_be(address.protocol());
                if protocol != libc::ETH_P_IP as u16 && protocol != libc::ETH_P_IPV6 as u16 {
                    continue;
                }
                let mut timestamp_ns = None;
                if let Ok(messages) = message.cmsgs() {
                    for control in messages {
                        if let ControlMessageOwned::ScmTimestampns(time) = control {
                            timestamp_ns = Some(
                                (time.tv_sec() as u64)
                                    .saturating_mul(1_000_000_000)
                                    .saturating_add(time.tv_nsec() as u64),
                            );
                        }
                    }
                }
                let timestamp_ns = timestamp_ns.unwrap_or_else(|| {
                    SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |since| since.as_nanos() as u64)
                });
                (message.bytes, timestamp_ns, address.ifindex() as u32)
            };
            if length > self.buffer.len() {
                self.truncated += 1;
            }
            return Ok(Some(Packet {
                timestamp_ns,
                interface,
                data: &self.buffer[..length.min(self.buffer.len())],
                length,
            }));
        }
    }
}

/// A pcap file of live packets (raw IP, nanosecond timestamps), as tcpdump would write it.
///
/// Records are gathered in memory and written in whole records, 8 KiB at a time (as a
/// `BufWriter` would), so that a write that fails (a full disk) is cut back to the last
/// whole record: the file stays a capture other tools read, and the error says how many
/// packets it holds. (pcap-file's writer reports every I/O error as "Error reading bytes"
/// and cannot say where its last whole record ends.)
pub struct PcapFile {
    path: PathBuf,
    file: File,
    /// Whole records not written yet, and how many packets they are.
    spool: Vec<u8>,
    spooled: u64,
    /// The file's length: its header and every record written.
    length: u64,
    /// Packets in the file.
    pub packets: u64,
}

/// How much is gathered before it is written.
const SPOOL_BYTES: usize = 8 * 1024;

/// The snapshot length in the header: every packet whole.
const SNAPLEN: u32 = LARGEST_PACKET as u32;

impl PcapFile {
    /// Creates the pcap file at `path` and writes its header, for packets of any size.
    pub fn create(path: &Path) -> Result<PcapFile, CaptureError> {
        let file = File::create(path).map_err(|error| {
            CaptureError::new(
                format!("cannot write the capture {}", path.display()),
                "give a path in a directory you can write",
            )
            .caused_by(error)
        })?;
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: SNAPLEN,
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::native(),
        };
        let mut spool = Vec::with_capacity(SPOOL_BYTES + LARGEST_PACKET);
        header
            .write_to(&mut spool)
            .map_err(|error| cannot_format(path, error))?;
        let mut pcap = PcapFile {
            path: path.to_path_buf(),
            file,
            spool,
            spooled: 0,
            length: 0,
            packets: 0,
        };
        // The header at once: a file that cannot take even that fails before the capture.
        pcap.write_out()?;
        Ok(pcap)
    }

    /// Adds `packet`; written out in batches, each a whole number of records.
    pub fn write(&mut self, packet: &Packet<'_>) -> Result<(), CaptureError> {
        let record = PcapPacket::new(
            Duration::from_nanos(packet.timestamp_ns),
            packet.length as u32,
            packet.data,
        );
        record
            .write_to::<_, NativeEndian>(&mut self.spool, TsResolution::NanoSecond, SNAPLEN)
            .map_err(|error| cannot_format(&self.path, error))?;
        self.spooled += 1;
        if self.spool.len() >= SPOOL_BYTES {
            self.write_out()?;
        }
        Ok(())
    }

    /// Writes what is gathered; on failure cuts the file back to its last whole record.
    fn write_out(&mut self) -> Result<(), CaptureError> {
        use std::io::Write;
        if self.spool.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.file.write_all(&self.spool) {
            let _ = self.file.set_len(self.length);
            self.spool.clear();
            return Err(CaptureError::new(
                format!(
                    "cannot write the capture {} after {} packets (the file holds them whole)",
                    self.path.display(),
                    self.packets
                ),
                "give a path on a disk with free space",
            )
            .caused_by(error));
        }
        self.length += self.spool.len() as u64;
        self.packets += self.spooled;
        self.spool.clear();
        self.spooled = 0;
        Ok(())
    }

    /// Writes out what is gathered; the packets in the file.
    pub fn finish(mut self) -> Result<u64, CaptureError> {
        self.write_out()?;
        Ok(self.packets)
    }
}

/// A packet the pcap format cannot hold (a time past 2106): not a write error.
fn cannot_format(path: &Path, error: pcap_file::PcapError) -> CaptureError {
    CaptureError::new(
        format!("cannot record a packet in {}", path.display()),
        "check the system clock",
    )
    .caused_by(error)
}

/// When a capture file is closed and the next begun (`tlslab capture --rotate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotation {
    /// Once the file holds this many bytes of packets.
    Size(u64),
    /// Once its first packet is this old, in capture time.
    Every(Duration),
}

/// Whether a capture file may be begun at a path (the caller's rule for existing files).
pub type FileCheck = dyn FnMut(&Path) -> Result<(), CaptureError> + Send;

/// Capture files written one after another: `NAME.pcap` alone, or with a rotation
/// `NAME-000001.pcap`, `NAME-000002.pcap`, ... (names that sort in order, so `tlslab pcap
/// NAME-*.pcap` reads them as one capture, its connections continuing across files).
pub struct PcapFiles {
    base: PathBuf,
    rotation: Option<Rotation>,
    /// Asked before each file is begun whether it may be written (the caller's rule for
    /// existing files).
    check: Box<FileCheck>,
    current: Option<PcapFile>,
    /// Bytes of packets in the current file, and the capture time of its first packet.
    bytes: u64,
    opened_at: Option<u64>,
    /// Every file begun, in order.
    pub paths: Vec<PathBuf>,
    /// Packets written to all of them.
    pub packets: u64,
}

impl PcapFiles {
    /// Creates the first file at once, so a path that cannot be written fails before the
    /// capture starts. `check` is asked about each file before it is begun; its error ends
    /// the capture.
    pub fn create(
        path: &Path,
        rotation: Option<Rotation>,
        check: impl FnMut(&Path) -> Result<(), CaptureError> + Send + 'static,
    ) -> Result<PcapFiles, CaptureError> {
        let mut files = PcapFiles {
            base: path.to_path_buf(),
            rotation,
            check: Box::new(check),
            current: None,
            bytes: 0,
            opened_at: None,
            paths: Vec::new(),
            packets: 0,
        };
        files.next()?;
        Ok(files)
    }

    /// The name of file `number` (from 1) of a capture into `base`.
    pub fn name(base: &Path, rotation: Option<Rotation>, number: usize) -> PathBuf {
        if rotation.is_none() {
            return base.to_path_buf();
        }
        let stem = base
            .file_stem()
            .map_or_else(|| "capture".into(), |stem| stem.to_string_lossy());
        let extension = base
            .extension()
            .map_or_else(|| "pcap".into(), |extension| extension.to_string_lossy());
        base.with_file_name(format!("{stem}-{number:06}.{extension}"))
    }

    fn next(&mut self) -> Result<(), CaptureError> {
        if let Some(file) = self.current.take() {
            file.finish()?;
        }
        let path = PcapFiles::name(&self.base, self.rotation, self.paths.len() + 1);
        (self.check)(&path)?;
        self.current = Some(PcapFile::create(&path)?);
        self.paths.push(path);
        self.bytes = 0;
        self.opened_at = None;
        Ok(())
    }

    /// Adds `packet` to the current file, first beginning the next when the rotation is due.
    pub fn write(&mut self, packet: &Packet<'_>) -> Result<(), CaptureError> {
        let due = match self.rotation {
            Some(Rotation::Size(limit)) => self.bytes > 0 && self.bytes >= limit,
            Some(Rotation::Every(period)) => self.opened_at.is_some_and(|opened| {
                packet.timestamp_ns.saturating_sub(opened) >= period.as_nanos() as u64
            }),
            None => false,
        };
        if due {
            self.next()?;
        }
        let Some(file) = self.current.as_mut() else {
            return Ok(());
        };
        file.write(packet)?;
        self.packets += 1;
        // The record header (16 bytes) and the packet.
        self.bytes += 16 + packet.data.len() as u64;
        self.opened_at.get_or_insert(packet.timestamp_ns);
        Ok(())
    }

    /// Writes out the last file; the files written, in order.
    pub fn finish(mut self) -> Result<Vec<PathBuf>, CaptureError> {
        if let Some(file) = self.current.take() {
            file.finish()?;
        }
        Ok(self.paths)
    }
}

/// Records a live capture into a pcap file until told to stop: what `tlslab run --capture`
/// runs beside the clients.
pub struct Recorder {
    live: Live,
    file: PcapFile,
}

impl Recorder {
    /// Opens the capture and creates `path`.
    pub fn open(path: &Path, interface: Option<&str>) -> Result<Recorder, CaptureError> {
        let live = Live::open(interface)?;
        let file = PcapFile::create(path)?;
        Ok(Recorder { live, file })
    }

    /// Records until `stop` is set, then takes what is still queued and writes it out.
    /// Returns the packets written.
    pub fn run(mut self, stop: &AtomicBool) -> Result<u64, CaptureError> {
        while !stop.load(Ordering::Relaxed) {
            if let Some(packet) = self.live.next_packet()? {
                self.file.write(&packet)?;
            }
        }
        while let Some(packet) = self.live.next_packet()? {
            self.file.write(&packet)?;
        }
        self.file.finish()
    }
}
