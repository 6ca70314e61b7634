// Package dnstest runs a real authoritative DNS server on 127.0.0.1 for tests,
// so code that resolves TXT, MX, CNAME, A/AAAA and PTR records (domain
// verification, MX delivery, PTR checks) is exercised over the wire with
// miekg/dns instead of through a fake resolver.
//
// The server answers authoritatively (AA set) for every name it holds:
// NXDOMAIN for a name it has never heard of, NOERROR with an empty answer for
// a known name without records of the asked type (RFC 2308 NODATA).
package dnstest

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// ttl is short because tests never cache; it only has to be valid.
const ttl = 60

// Server is an authoritative DNS server on 127.0.0.1 answering over UDP and
// TCP on the same port. It is safe for concurrent use.
type Server struct {
	addr string
	udp  *dns.Server
	tcp  *dns.Server

	mu      sync.RWMutex
	records map[string][]dns.RR // keyed by lowercased FQDN (with trailing dot)
}

// Start launches a server on a free port and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{records: make(map[string][]dns.RR)}

	// Bind UDP first on :0, then TCP on the same port; another process may
	// hold that TCP port, so retry a few times with fresh ports.
	var (
		pc  net.PacketConn
		ln  net.Listener
		err error
	)
	for range 20 {
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("dnstest: listen udp: %v", err)
		}
		ln, err = net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		t.Fatalf("dnstest: listen tcp on the udp port: %v", err)
	}
	s.addr = pc.LocalAddr().String()

	handler := dns.HandlerFunc(s.serve)
	s.udp = &dns.Server{PacketConn: pc, Handler: handler}
	s.tcp = &dns.Server{Listener: ln, Handler: handler}

	var started sync.WaitGroup
	started.Add(2)
	s.udp.NotifyStartedFunc = started.Done
	s.tcp.NotifyStartedFunc = started.Done
	go func() { _ = s.udp.ActivateAndServe() }()
	go func() { _ = s.tcp.ActivateAndServe() }()
	started.Wait()

	t.Cleanup(func() {
		_ = s.udp.Shutdown()
		_ = s.tcp.Shutdown()
	})
	return s
}

// Addr is the server's host:port, the same for UDP and TCP.
func (s *Server) Addr() string { return s.addr }

// AddTXT adds one TXT record at name. Its character-strings are the given
// values; a value longer than 255 bytes is split into 255-byte
// character-strings, as zone tools do with long DKIM keys (RFC 7208 §3.3).
func (s *Server) AddTXT(name string, values ...string) {
	var parts []string
	for _, v := range values {
		for len(v) > 255 {
			parts = append(parts, escapeTXT(v[:255]))
			v = v[255:]
		}
		parts = append(parts, escapeTXT(v))
	}
	if len(parts) == 0 {
		parts = []string{""}
	}
	s.add(&dns.TXT{Hdr: s.hdr(name, dns.TypeTXT), Txt: parts})
}

// Record is a DNS record as POST /v1/domains lists it (its JSON decodes
// into it).
type Record struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Value    string `json:"value"`
	Priority *int   `json:"priority"`
}

// Publish serves recs exactly as a domain owner following them would.
func (s *Server) Publish(recs []Record) {
	for _, r := range recs {
		switch r.Type {
		case "TXT":
			s.AddTXT(r.Name, r.Value)
		case "MX":
			s.AddMX(r.Name, r.Value, uint16(*r.Priority))
		case "CNAME":
			s.AddCNAME(r.Name, r.Value)
		}
	}
}

// AddMX adds an MX record at name pointing at host with the given preference.
func (s *Server) AddMX(name, host string, pref uint16) {
	s.add(&dns.MX{Hdr: s.hdr(name, dns.TypeMX), Mx: fqdn(host), Preference: pref})
}

// AddCNAME adds a CNAME at name pointing at target. The server does not chase
// the chain; resolvers get the CNAME itself.
func (s *Server) AddCNAME(name, target string) {
	s.add(&dns.CNAME{Hdr: s.hdr(name, dns.TypeCNAME), Target: fqdn(target)})
}

// AddA adds an IPv4 address record; it panics on a malformed ip since that is
// a bug in the test.
func (s *Server) AddA(name, ip string) {
	addr := net.ParseIP(ip).To4()
	if addr == nil {
		panic("dnstest: AddA: not an IPv4 address: " + ip)
	}
	s.add(&dns.A{Hdr: s.hdr(name, dns.TypeA), A: addr})
}

// AddAAAA adds an IPv6 address record; it panics on a malformed ip.
func (s *Server) AddAAAA(name, ip string) {
	addr := net.ParseIP(ip)
	if addr == nil || addr.To4() != nil {
		panic("dnstest: AddAAAA: not an IPv6 address: " + ip)
	}
	s.add(&dns.AAAA{Hdr: s.hdr(name, dns.TypeAAAA), AAAA: addr})
}

// AddPTR adds a reverse record for ip (in-addr.arpa or ip6.arpa) naming host.
func (s *Server) AddPTR(ip, host string) {
	rev, err := dns.ReverseAddr(ip)
	if err != nil {
		panic("dnstest: AddPTR: " + err.Error())
	}
	s.add(&dns.PTR{Hdr: s.hdr(rev, dns.TypePTR), Ptr: fqdn(host)})
}

// Remove deletes every record of qtype at name. The name stays known (and so
// answers NODATA rather than NXDOMAIN) while it holds other records.
func (s *Server) Remove(name string, qtype uint16) {
	key := fqdn(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.records[key][:0]
	for _, rr := range s.records[key] {
		if rr.Header().Rrtype != qtype {
			kept = append(kept, rr)
		}
	}
	if len(kept) == 0 {
		delete(s.records, key)
		return
	}
	s.records[key] = kept
}

// Reset removes every record.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = make(map[string][]dns.RR)
}

func (s *Server) hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: fqdn(name), Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
}

func (s *Server) add(rr dns.RR) {
	key := rr.Header().Name
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[key] = append(s.records[key], rr)
}

func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	key := fqdn(q.Name)

	s.mu.RLock()
	rrs, known := s.records[key]
	for _, rr := range rrs {
		if rr.Header().Rrtype == q.Qtype || q.Qtype == dns.TypeANY {
			c := dns.Copy(rr)
			c.Header().Name = q.Name // echo the asker's spelling, as servers do
			m.Answer = append(m.Answer, c)
		}
	}
	s.mu.RUnlock()

	if !known {
		m.Rcode = dns.RcodeNameError
	}
	// Over UDP, a reply that does not fit the client's buffer is cut and
	// flagged TC so the client retries over TCP, as real servers do.
	if _, isUDP := w.RemoteAddr().(*net.UDPAddr); isUDP {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		m.Truncate(size)
	}
	_ = w.WriteMsg(m)
}

// escapeTXT turns raw bytes into miekg/dns's presentation form, which is what
// it expects in dns.TXT.Txt: backslash and quote escaped, other unprintable
// bytes as \DDD.
func escapeTXT(raw string) string {
	var b strings.Builder
	for i := range len(raw) {
		c := raw[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c > '~':
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// fqdn lowercases name and gives it exactly one trailing dot.
func fqdn(name string) string {
	return dns.Fqdn(strings.ToLower(strings.TrimSuffix(name, ".")))
}
