//! BPF filters (`--filter 'tcp port 443'`), in tcpdump's syntax: libpcap compiles the
//! expression (through the `pcap` crate, on a "dead" capture of the link type the packets
//! have), the kernel runs the program on a live socket so that it never copies what is left
//! out, and libpcap's own interpreter runs it on the packets of a file. Both are libpcap's
//! code, so a file and a live interface keep exactly the same packets, as tcpdump would.

use std::collections::HashMap;

use pcap::{BpfProgram, Capture, Linktype};

use crate::packets::CaptureError;

/// `DLT_RAW` as Linux's libpcap numbers it (the file format's LINKTYPE_RAW is 101, which
/// libpcap's compiler does not take): packets that begin with their IP header, as the live
/// capture's datagram socket hands them to its filter.
const DLT_RAW: i32 = 12;

/// A filter expression, compiled once per link type met.
pub struct Filter {
    expression: String,
    /// By libpcap link type (DLT): the program, or why the expression does not apply.
    programs: HashMap<i32, Result<BpfProgram, String>>,
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

/// The program for link type `dlt`, or libpcap's reason.
fn compile(expression: &str, dlt: i32) -> Result<BpfProgram, String> {
    let capture = Capture::dead(Linktype(dlt)).map_err(|error| error.to_string())?;
    capture.compile(expression, true).map_err(|error| {
        // "libpcap error: syntax error" says libpcap once.
        let text = error.to_string();
        text.strip_prefix("libpcap error: ")
            .map_or(text.clone(), str::to_string)
    })
}

impl Filter {
    /// Checks `expression` by compiling it for IP packets (what every link type carries and
    /// the live capture sees); link-layer expressions (`ether host ...`) are refused, since
    /// a live capture never sees a link header.
    pub fn new(expression: &str) -> Result<Filter, CaptureError> {
        let program = compile(expression, DLT_RAW).map_err(|reason| CaptureError {
            message: format!("--filter '{expression}': {reason}"),
            hint: format!(
                "{SYNTAX_HINT}; tlslab filters IP packets, so link-layer terms (ether, vlan) \
                 do not apply"
            ),
        })?;
        let mut programs = HashMap::new();
        programs.insert(DLT_RAW, Ok(program));
        Ok(Filter {
            expression: expression.to_string(),
            programs,
        })
    }

    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The program for a live capture's packets (IP, without link header), as the kernel
    /// takes it: `struct sock_filter` instructions.
    pub fn kernel_instructions(&self) -> Vec<nix::libc::sock_filter> {
        let Some(Ok(program)) = self.programs.get(&DLT_RAW) else {
            return Vec::new();
        };
        // pcap's BpfInstruction wraps libpcap's `struct bpf_insn` (code u16, jt u8, jf u8, k
        // u32) and shows only its Display, "code jt jf k": read back from there, so that no
        // layout is assumed.
        program
            .get_instructions()
            .iter()
            .filter_map(|instruction| {
                let text = instruction.to_string();
                let mut fields = text.split(' ');
                Some(nix::libc::sock_filter {
                    code: fields.next()?.parse().ok()?,
                    jt: fields.next()?.parse().ok()?,
                    jf: fields.next()?.parse().ok()?,
                    k: fields.next()?.parse().ok()?,
                })
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
        match program {
            Ok(program) => Ok(program.filter(data)),
            Err(reason) => Err(CaptureError {
                message: format!(
                    "--filter '{expression}' does not apply to link type {dlt}: {reason}"
                ),
                hint: format!(
                    "{SYNTAX_HINT}; a capture's link type decides which terms apply \
                     (`tcpdump -r FILE -d EXPRESSION` shows the same)"
                ),
            }),
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
