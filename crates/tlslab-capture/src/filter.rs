//! BPF filters (`--filter 'tcp port 443'`), in tcpdump's syntax: libpcap compiles the
//! expression (on a "dead" capture of the link type the packets have), the kernel runs the
//! program on a live socket so that it never copies what is left out, and libpcap's own
//! interpreter runs it on the packets of a file. Both are libpcap's code, so a file and a live
//! interface keep exactly the same packets, as tcpdump would.
//!
//! libpcap is loaded when a filter is first asked for, not linked: the `pcap` crate links it at
//! build time, which would make every build need libpcap's headers (`libpcap-dev`) and every
//! binary need the library even when no filter is used. Six functions of its stable C API are
//! all this needs, so they are looked up with `libloading` (hand-written declarations, below,
//! of what libpcap's `pcap/pcap.h` and `pcap/bpf.h` declare).

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::{Arc, OnceLock};

use crate::packets::CaptureError;

/// `DLT_RAW` as Linux's libpcap numbers it (the file format's LINKTYPE_RAW is 101, which
/// libpcap's compiler does not take): packets that begin with their IP header, as the live
/// capture's datagram socket hands them to its filter.
const DLT_RAW: i32 = 12;

/// `PCAP_NETMASK_UNKNOWN`: no netmask, so `ip broadcast` is refused rather than guessed.
const NETMASK_UNKNOWN: u32 = 0xffff_ffff;

/// libpcap's `struct bpf_insn`, the same layout as the kernel's `struct sock_filter`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct Instruction {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// libpcap's `struct bpf_program`.
#[repr(C)]
struct RawProgram {
    length: c_uint,
    instructions: *mut Instruction,
}

/// libpcap's `struct pcap_pkthdr`.
#[repr(C)]
struct PacketHeader {
    timestamp: nix::libc::timeval,
    captured: u32,
    length: u32,
}

/// The libpcap functions a filter needs, looked up once per process.
struct Libpcap {
    open_dead: unsafe extern "C" fn(c_int, c_int) -> *mut c_void,
    compile: unsafe extern "C" fn(*mut c_void, *mut RawProgram, *const c_char, c_int, u32) -> c_int,
    error_text: unsafe extern "C" fn(*mut c_void) -> *mut c_char,
    free_code: unsafe extern "C" fn(*mut RawProgram),
    close: unsafe extern "C" fn(*mut c_void),
    offline_filter:
        unsafe extern "C" fn(*const RawProgram, *const PacketHeader, *const u8) -> c_int,
    /// Kept loaded for as long as the process runs (the pointers above point into it).
    _library: libloading::Library,
}

/// Why a filter cannot be compiled or applied. Cloned out of the caches that keep it (the
/// process's libpcap, a filter's program per link type), so its causes are shared.
#[derive(Debug, Clone, thiserror::Error)]
enum FilterProblem {
    /// No libpcap runtime library could be loaded; `tried` names each library tried.
    #[error("cannot load libpcap, which compiles filters (tried {tried})")]
    NoLibpcap {
        tried: String,
        #[source]
        last: Arc<libloading::Error>,
    },
    /// The expression cannot be handed to C.
    #[error("the expression holds a NUL character")]
    NulCharacter,
    /// libpcap has no compiler for the link type.
    #[error("libpcap does not know link type {0}")]
    UnknownLinkType(i32),
    /// libpcap's compiler refused the expression; its message is all libpcap gives.
    #[error("{0}")]
    Refused(String),
}

/// The names Debian and other distributions give the runtime library (package `libpcap0.8`,
/// which tcpdump and tshark depend on), newest ABI name last.
const LIBRARY_NAMES: [&str; 3] = ["libpcap.so.0.8", "libpcap.so.1", "libpcap.so"];

impl Libpcap {
    fn load() -> Result<Libpcap, FilterProblem> {
        let mut last = None;
        for name in LIBRARY_NAMES {
            // SAFETY: loading libpcap runs no initialisers with preconditions of ours.
            let loaded = unsafe { libloading::Library::new(name) }.and_then(Libpcap::bind);
            match loaded {
                Ok(libpcap) => return Ok(libpcap),
                Err(error) => last = Some(error),
            }
        }
        Err(FilterProblem::NoLibpcap {
            tried: LIBRARY_NAMES.join(", "),
            last: Arc::new(last.expect("LIBRARY_NAMES is not empty")),
        })
    }

    fn bind(library: libloading::Library) -> Result<Libpcap, libloading::Error> {
        // SAFETY: each symbol is declared with the signature pcap.h gives it (libpcap >= 1.0).
        unsafe {
            Ok(Libpcap {
                open_dead: *library.get(b"pcap_open_dead\0")?,
                compile: *library.get(b"pcap_compile\0")?,
                error_text: *library.get(b"pcap_geterr\0")?,
                free_code: *library.get(b"pcap_freecode\0")?,
                close: *library.get(b"pcap_close\0")?,
                offline_filter: *library.get(b"pcap_offline_filter\0")?,
                _library: library,
            })
        }
    }

    /// The process's libpcap, loaded on first use.
    fn get() -> Result<&'static Libpcap, FilterProblem> {
        static LIBPCAP: OnceLock<Result<Libpcap, FilterProblem>> = OnceLock::new();
        LIBPCAP
            .get_or_init(Libpcap::load)
            .as_ref()
            .map_err(FilterProblem::clone)
    }
}

/// A compiled program: libpcap's instructions, copied out of libpcap's allocation.
struct Program {
    instructions: Vec<Instruction>,
}

impl Program {
    /// Whether libpcap's interpreter passes `data`.
    fn passes(&self, libpcap: &Libpcap, data: &[u8]) -> bool {
        let Ok(length) = u32::try_from(data.len()) else {
            return false;
        };
        let program = RawProgram {
            length: self.instructions.len() as c_uint,
            // libpcap only reads the instructions; the cast is what its C signature asks.
            instructions: self.instructions.as_ptr().cast_mut(),
        };
        let header = PacketHeader {
            timestamp: nix::libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            captured: length,
            length,
        };
        // SAFETY: the program and header live through the call, and `data` holds `length`
        // bytes, all that the interpreter reads (it bounds every load by `captured`).
        unsafe { (libpcap.offline_filter)(&program, &header, data.as_ptr()) != 0 }
    }
}

/// The program for link type `dlt`, or libpcap's reason.
fn compile(expression: &str, dlt: i32) -> Result<Program, FilterProblem> {
    let libpcap = Libpcap::get()?;
    let text = CString::new(expression).map_err(|_| FilterProblem::NulCharacter)?;
    // SAFETY: a dead capture needs no device; it is closed below on every path.
    let capture = unsafe { (libpcap.open_dead)(dlt, 262_144) };
    if capture.is_null() {
        return Err(FilterProblem::UnknownLinkType(dlt));
    }
    let mut program = RawProgram {
        length: 0,
        instructions: std::ptr::null_mut(),
    };
    // SAFETY: `capture` is a live pcap_t, `program` a writable bpf_program, `text` a C string.
    let status =
        unsafe { (libpcap.compile)(capture, &mut program, text.as_ptr(), 1, NETMASK_UNKNOWN) };
    let result = if status == 0 {
        let instructions = if program.instructions.is_null() {
            Vec::new()
        } else {
            // SAFETY: on success libpcap filled `length` instructions at `instructions`.
            unsafe { std::slice::from_raw_parts(program.instructions, program.length as usize) }
                .to_vec()
        };
        // SAFETY: the program was filled by pcap_compile and is freed once.
        unsafe { (libpcap.free_code)(&mut program) };
        Ok(Program { instructions })
    } else {
        // SAFETY: pcap_geterr returns the capture's NUL-terminated message buffer.
        let message = unsafe { CStr::from_ptr((libpcap.error_text)(capture)) };
        Err(FilterProblem::Refused(
            message.to_string_lossy().into_owned(),
        ))
    };
    // SAFETY: closed once; nothing refers to it any more.
    unsafe { (libpcap.close)(capture) };
    result
}

/// A filter expression, compiled once per link type met.
pub struct Filter {
    expression: String,
    /// By libpcap link type (DLT): the program, or why the expression does not apply.
    programs: HashMap<i32, Result<Program, FilterProblem>>,
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Filter")
            .field("expression", &self.expression)
            .finish()
    }
}

const SYNTAX_HINT: &str = "the expression is in tcpdump's syntax (man pcap-filter), for example \
     --filter 'tcp port 443' or --filter 'host 192.0.2.7 and (tcp or udp port 443)'";

impl Filter {
    /// Checks `expression` by compiling it for IP packets (what every link type carries and
    /// the live capture sees); link-layer expressions (`ether host ...`) are refused, since
    /// a live capture never sees a link header.
    pub fn new(expression: &str) -> Result<Filter, CaptureError> {
        if let Err(reason) = Libpcap::get() {
            return Err(CaptureError::new(
                format!("--filter '{expression}' cannot be used"),
                "install libpcap's runtime library (Debian: apt install libpcap0.8; \
                 tcpdump brings it), or capture without --filter",
            )
            .caused_by(reason));
        }
        let program = compile(expression, DLT_RAW).map_err(|reason| {
            CaptureError::new(
                format!("--filter '{expression}': {reason}"),
                format!(
                    "{SYNTAX_HINT}; tlslab filters IP packets, so link-layer terms (ether, \
                     vlan) do not apply"
                ),
            )
        })?;
        let mut programs = HashMap::new();
        programs.insert(DLT_RAW, Ok(program));
        Ok(Filter {
            expression: expression.to_string(),
            programs,
        })
    }

    /// The expression as the user gave it, for messages.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The program for a live capture's packets (IP, without link header), as the kernel
    /// takes it: `struct sock_filter` instructions.
    pub fn kernel_instructions(&self) -> Vec<nix::libc::sock_filter> {
        let Some(Ok(program)) = self.programs.get(&DLT_RAW) else {
            return Vec::new();
        };
        program
            .instructions
            .iter()
            .map(|instruction| nix::libc::sock_filter {
                code: instruction.code,
                jt: instruction.jt,
                jf: instruction.jf,
                k: instruction.k,
            })
            .collect()
    }

    /// Whether the frame `data` of libpcap link type `dlt` passes; an error when the
    /// expression cannot apply to that link type.
    pub(crate) fn matches(&mut self, dlt: i32, data: &[u8]) -> Result<bool, CaptureError> {
        let expression = &self.expression;
        let program = self
            .programs
            .entry(dlt)
            .or_insert_with(|| compile(expression, dlt));
        let passes = match Libpcap::get() {
            Ok(libpcap) => program
                .as_ref()
                .map(|program| program.passes(libpcap, data))
                .map_err(FilterProblem::clone),
            Err(reason) => Err(reason),
        };
        match passes {
            Ok(passes) => Ok(passes),
            Err(reason) => Err(CaptureError::new(
                format!("--filter '{expression}' does not apply to link type {dlt}: {reason}"),
                format!(
                    "{SYNTAX_HINT}; a capture's link type decides which terms apply \
                     (`tcpdump -r FILE -d EXPRESSION` shows the same)"
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 TCP packet from 10.0.0.1:40000 to 10.0.0.2:`port`, SYN, no payload.
    fn syn_to(port: u16) -> Vec<u8> {
        let builder = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, port, 1, 65535)
            .syn();
        let mut packet = Vec::new();
        builder.write(&mut packet, &[]).unwrap();
        packet
    }

    #[test]
    fn a_port_filter_keeps_its_port_alone_on_raw_and_ethernet_frames() {
        let mut filter = Filter::new("tcp port 443").unwrap();
        assert!(filter.matches(DLT_RAW, &syn_to(443)).unwrap());
        assert!(!filter.matches(DLT_RAW, &syn_to(8443)).unwrap());
        let mut frame = vec![0; 12];
        frame.extend([0x08, 0x00]);
        frame.extend(syn_to(443));
        assert!(filter.matches(1, &frame).unwrap());
        // The same frame read as raw IP is not IP at all.
        assert!(!filter.matches(DLT_RAW, &frame).unwrap());
        // The kernel's copy of the program: as many instructions, ending in a return.
        let instructions = filter.kernel_instructions();
        assert!(instructions.len() > 4);
        assert_eq!(instructions.last().map(|last| last.code), Some(0x06));
    }

    #[test]
    fn a_bad_expression_says_what_libpcap_said() {
        let error = Filter::new("tcp port").unwrap_err();
        assert!(error.message.contains("syntax error"), "{}", error.message);
        assert!(error.hint.contains("tcp port 443"));
        let error = Filter::new("ether host 00:11:22:33:44:55").unwrap_err();
        assert!(error.hint.contains("link-layer"));
    }
}
