package outbound

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-smtp"
)

// Envelope is the SMTP envelope: the return path (MAIL FROM) and the
// recipients (RCPT TO), Bcc included.
type Envelope struct {
	From string
	To   []string
	// Source is the local IP address to connect from (a workspace's
	// dedicated IP); "" lets the system choose.
	Source string
	// WorkspaceID and EmailID say whose message it is: the capture
	// transport files it under them; SMTP transports ignore them.
	WorkspaceID, EmailID string
}

// sourceKey prefixes a pool key with the source address, so a session
// opened from one address is never reused for mail from another.
func sourceKey(source, key string) string {
	if source == "" {
		return key
	}
	return "src=" + source + "|" + key
}

// cutSource splits what sourceKey joined.
func cutSource(key string) (source, rest string) {
	if r, ok := strings.CutPrefix(key, "src="); ok {
		source, rest, _ = strings.Cut(r, "|")
		return source, rest
	}
	return "", key
}

// RcptResult is the receiving server's answer for one recipient: to RCPT
// when it refused there, else to the end of DATA.
type RcptResult struct {
	Rcpt     string
	Code     int    // SMTP reply code; 0 when no server answered (see Message)
	Enhanced string // RFC 3463 code such as "5.1.1", "" when the server gave none
	Message  string
	// Temporary is true for 4xx replies and for failures to reach any
	// server; the recipient should be retried later.
	Temporary bool
	OK        bool   // accepted for delivery (250 after DATA)
	Host      string // the server that answered, host:port
	RemoteIP  string // the address dialled, when a session was open
	TLS       string // the session's TLS version ("TLS 1.3"), "" in the clear
	// Stage is where the transaction ended for this recipient: StageConnect
	// (no server answered a command: DNS, TCP, greeting, EHLO, TLS),
	// StageMail, StageRcpt or StageData. Only a refusal at RCPT speaks
	// about the recipient itself (see Suppresses).
	Stage string
	// Timeout: no server answered within the command timeout (a hanging
	// server, held back like one that refuses).
	Timeout bool
	// Session and Steps are the attempt's story (GET /v1/emails/{id}/attempts):
	// the connection it went over and each command with its reply.
	Session Session
	Steps   []Step
}

// Session is what is known of the connection an attempt went over.
type Session struct {
	SourceIP string // the local address it left from
	Cipher   string // the TLS cipher suite, "" in the clear
	// Verified: the server's certificate chain and name verified against
	// the system roots (opportunistic TLS goes on when they do not).
	Verified bool
	MTASTS   string // the recipient domain's MTA-STS mode: enforce, testing, none; "" when off
	Reused   bool   // an idle pooled session carried it (no connect step)
}

// Step is one SMTP command of an attempt and the server's reply to it.
type Step struct {
	Command  string `json:"command"` // CONNECT (TCP, greeting, EHLO, STARTTLS, AUTH), MAIL, RCPT, DATA or BDAT
	Code     int    `json:"code,omitempty"`
	Enhanced string `json:"enhanced,omitempty"`
	Text     string `json:"text,omitempty"`
	Millis   int64  `json:"ms"`
}

// Transaction stages (RcptResult.Stage). StageReport marks a failure that
// came back later in a delivery status notification.
const (
	StageConnect = "connect"
	StageMail    = "mail"
	StageRcpt    = "rcpt"
	StageData    = "data"
	StageReport  = "report"
)

// Result gathers per-recipient outcomes of one Send.
type Result struct {
	Rcpts []RcptResult
	// Host is the server that answered (host:port); with several
	// destination domains, the first one.
	Host string
}

// Transport delivers one message to the recipients of an envelope.
//
// Send returns a nil error whenever at least one server answered; refused
// recipients are in Result.Rcpts. It returns a *SendError when no
// recipient got an answer (connection refused, dropped, timed out, no
// usable MX); Result is then still filled, one RcptResult per recipient.
type Transport interface {
	// Send keeps no reference to data after it returns: the caller reuses it.
	Send(ctx context.Context, env Envelope, data []byte) (*Result, error)
}

// SendError is a failure of the whole transaction.
type SendError struct {
	Temporary bool   // retry later; false for a domain that cannot receive mail (no such domain, null MX)
	Host      string // the server involved, if any
	Err       error
}

func (e *SendError) Error() string {
	kind := "permanent"
	if e.Temporary {
		kind = "temporary"
	}
	if e.Host != "" {
		return fmt.Sprintf("outbound: %s failure at %s: %v", kind, e.Host, e.Err)
	}
	return fmt.Sprintf("outbound: %s failure: %v", kind, e.Err)
}

func (e *SendError) Unwrap() error { return e.Err }

// IsTemporary reports whether err (from Send) is worth retrying. Errors
// that are not a *SendError (a cancelled context, say) count as temporary.
func IsTemporary(err error) bool {
	var se *SendError
	if errors.As(err, &se) {
		return se.Temporary
	}
	return err != nil
}

// errBroken marks an I/O failure mid-transaction: the connection must not
// go back to the pool and the recipients get no server answer. unsent says
// the failure came before the server answered anything of this
// transaction (its first command), so it may be tried on a new session.
type errBroken struct {
	err    error
	unsent bool
}

func (e errBroken) Error() string { return e.err.Error() }
func (e errBroken) Unwrap() error { return e.err }

// transact runs MAIL, RCPT for each recipient and, when at least one was
// accepted, the message (BDAT when the server offers CHUNKING, else DATA)
// on an open session. A server reply (even 5xx) yields per-recipient
// results; only a broken connection returns an error. cn.clean says
// whether the server was left with no transaction open.
//
// Where the server offers PIPELINING (RFC 2920) the commands go as one
// group (pipelined): one write and one wait instead of one per command.
func transact(cn *conn, host string, env Envelope, data []byte) ([]RcptResult, error) {
	cn.clean = false
	out := make([]RcptResult, len(env.To))
	ip, tlsVersion := cn.peer()
	sess := cn.session()
	var shared []Step // the session's steps every recipient shares
	if !sess.Reused {
		shared = append(shared, Step{Command: "CONNECT", Millis: cn.connectMillis})
	}
	for i, r := range env.To {
		out[i] = RcptResult{Rcpt: r, Host: host, RemoteIP: ip, TLS: tlsVersion, Stage: StageMail, Session: sess}
	}
	var accepted []int
	var err error
	sent := false // the message went with the group
	if cn.pipelining && cn.raw != nil && len(env.To) <= maxPipelined {
		accepted, sent, err = pipelined(cn, env, data, out, shared)
	} else {
		accepted, err = stepwise(cn, env, data, out, shared)
	}
	if err != nil || len(accepted) == 0 || sent {
		return out, err
	}
	for _, i := range accepted {
		out[i].Stage = StageData
	}
	var text string
	command := "DATA"
	began := time.Now()
	if cn.chunking && cn.raw != nil {
		command = "BDAT"
		text, err = bdat(cn, data)
	} else {
		text, err = dataCmd(cn.c, data)
	}
	return out, finishData(cn, out, accepted, command, began, text, err)
}

// finishData records the server's answer to the message (text when it
// took it, else err) on the accepted recipients.
func finishData(cn *conn, out []RcptResult, accepted []int, command string, began time.Time, text string, err error) error {
	withSteps(out, accepted, []Step{step(command, began, err, text)})
	if err != nil {
		if !applyReply(out, accepted, err) {
			return errBroken{err: err}
		}
		return nil
	}
	cn.clean = true
	for _, i := range accepted {
		out[i].OK = true
		out[i].Code = 250
		out[i].Message = text
	}
	return nil
}

// stepwise runs MAIL and each RCPT one at a time through the go-smtp
// client, and returns the recipients accepted (none when the server
// refused MAIL or every RCPT: it has been told RSET).
func stepwise(cn *conn, env Envelope, data []byte, out []RcptResult, shared []Step) ([]int, error) {
	c := cn.c
	opts := &smtp.MailOptions{Size: int64(len(data))}
	began := time.Now()
	err := c.Mail(env.From, opts)
	shared = append(shared, step("MAIL", began, err, ""))
	if err != nil {
		withSteps(out, nil, shared)
		if !applyReply(out, nil, err) {
			return nil, errBroken{err: err, unsent: true}
		}
		_ = c.Reset()
		return nil, nil
	}
	accepted := make([]int, 0, len(env.To))
	for i, r := range env.To {
		out[i].Stage = StageRcpt
		began := time.Now()
		err := c.Rcpt(r, nil)
		out[i].Steps = append(append(out[i].Steps, shared...), step("RCPT", began, err, ""))
		if err != nil {
			if !applyReply(out[i:i+1], nil, err) {
				return nil, errBroken{err: err}
			}
			continue
		}
		accepted = append(accepted, i)
	}
	if len(accepted) == 0 {
		if err := c.Reset(); err != nil {
			return nil, errBroken{err: err}
		}
	}
	return accepted, nil
}

// maxPipelined bounds the recipients of a pipelined group: their replies
// must fit in the socket buffers while the group is still being written
// (RFC 2920 section 3.1's deadlock), and every server takes 100 (RFC 5321
// section 4.5.3.1.8).
const maxPipelined = 100

// maxPipelinedData bounds the message sent within the group, before the
// server has said whether it takes any recipient (RFC 3030 lets BDAT be
// pipelined; a refused chunk is read and dropped): a larger one waits for
// the RCPT replies.
const maxPipelinedData = 64 << 10

// pipelined writes MAIL, every RCPT and, where the server offers CHUNKING
// and the message is small, BDAT LAST and the message as one group, then
// reads the replies in order. The commands are the go-smtp client's, byte
// for byte. sent says the message went with the group (its reply is then
// recorded here); no recipient is taken as delivered before the server's
// 250 to BDAT. When MAIL or every RCPT is refused the server is told RSET
// once the replies are in.
func pipelined(cn *conn, env Envelope, data []byte, out []RcptResult, shared []Step) (accepted []int, sent bool, err error) {
	sent = cn.chunking && len(data) <= maxPipelinedData
	b := append(cn.wbuf[:0], "MAIL FROM:<"...)
	b = append(append(b, env.From...), '>')
	if cn.eightBit {
		b = append(b, " BODY=8BITMIME"...)
	}
	if cn.sizeExt && len(data) != 0 {
		b = strconv.AppendInt(append(b, " SIZE="...), int64(len(data)), 10)
	}
	b = append(b, "\r\n"...)
	for _, r := range env.To {
		b = append(append(append(b, "RCPT TO:<"...), r...), ">\r\n"...)
	}
	if sent {
		b = strconv.AppendInt(append(b, "BDAT "...), int64(len(data)), 10)
		b = append(append(b, " LAST\r\n"...), data...)
	}
	if cap(b) <= 2*maxPipelinedData {
		cn.wbuf = b[:0]
	}
	command, submission := cn.c.CommandTimeout, cn.c.SubmissionTimeout
	if command <= 0 {
		command = 5 * time.Minute
	}
	if submission <= 0 {
		submission = 10 * time.Minute
	}
	defer func() { _ = cn.raw.SetDeadline(time.Time{}) }()
	if cn.r == nil {
		cn.r = textproto.NewReader(bufio.NewReaderSize(cn.raw, 512))
	}
	_ = cn.raw.SetDeadline(time.Now().Add(submission))
	began := time.Now()
	_, err = cn.raw.Write(b)
	if err == nil {
		_ = cn.raw.SetDeadline(time.Now().Add(command))
		err = readResponse(cn.r, 250)
	}
	shared = append(shared, step("MAIL", began, err, ""))
	mailErr := err
	if err != nil && !applyReply(out, nil, err) {
		// Nothing of the transaction was answered: it may be tried again
		// on a new session. The message may have gone with the group; if
		// the server took it and every reply was lost, it arrives twice,
		// as it would when the retry schedule sent it again (no 250 was
		// read either way).
		withSteps(out, nil, shared)
		return nil, false, errBroken{err: err, unsent: true}
	}
	if mailErr != nil {
		withSteps(out, nil, shared)
	}
	accepted = make([]int, 0, len(env.To))
	for i := range env.To {
		if mailErr == nil {
			out[i].Stage = StageRcpt
		}
		began := time.Now()
		_ = cn.raw.SetDeadline(time.Now().Add(command))
		err := readResponse(cn.r, 25)
		if mailErr != nil { // a refused MAIL's answer stands for every recipient
			if err != nil && !isReply(err) {
				return nil, false, errBroken{err: err}
			}
			continue
		}
		out[i].Steps = append(append(out[i].Steps, shared...), step("RCPT", began, err, ""))
		if err != nil {
			if !applyReply(out[i:i+1], nil, err) {
				return nil, false, errBroken{err: err}
			}
			continue
		}
		accepted = append(accepted, i)
	}
	if sent {
		began := time.Now()
		_ = cn.raw.SetDeadline(time.Now().Add(submission))
		lines, code, err := readReply(cn.r)
		if len(accepted) > 0 {
			for _, i := range accepted {
				out[i].Stage = StageData
			}
			if err == nil && code != 250 {
				err = replyError(code, lines)
			}
			text := strings.Join(lines, "\n") // as go-smtp's DataResponse has it
			return accepted, true, finishData(cn, out, accepted, "BDAT", began, text, err)
		}
		if err != nil {
			return nil, true, errBroken{err: err}
		}
		// No recipient: the chunk was refused (RFC 3030 has the server read
		// and drop it), whatever the reply said.
	}
	if mailErr != nil || len(accepted) == 0 {
		if err := cn.c.Reset(); err != nil {
			return nil, sent, errBroken{err: err}
		}
		return nil, sent, nil
	}
	return accepted, sent, nil
}

// readResponse reads one reply as the go-smtp client does (a code other
// than expect is an *smtp.SMTPError, its RFC 3463 code taken out).
func readResponse(r *textproto.Reader, expect int) error {
	_, _, err := r.ReadResponse(expect)
	var te *textproto.Error
	if !errors.As(err, &te) {
		return err
	}
	se := &smtp.SMTPError{Code: te.Code, Message: te.Msg}
	parts := strings.SplitN(te.Msg, " ", 2)
	if len(parts) != 2 {
		return se
	}
	var ec smtp.EnhancedCode
	nums := strings.Split(parts[0], ".")
	if len(nums) != 3 {
		return se
	}
	for i, n := range nums {
		v, err := strconv.Atoi(n)
		if err != nil {
			return se
		}
		ec[i] = v
	}
	se.EnhancedCode = ec
	// Per RFC 2034, enhanced code should be prepended to each line.
	se.Message = strings.ReplaceAll(parts[1], "\n"+parts[0]+" ", "\n")
	return se
}

// isReply says whether err is a server's reply (not a broken session).
func isReply(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se)
}

// dataCmd sends the message with DATA (dot-stuffed by the client).
func dataCmd(c *smtp.Client, data []byte) (string, error) {
	w, err := c.Data()
	if err != nil {
		return "", err
	}
	if _, err := w.Write(data); err != nil {
		return "", errBroken{err: err}
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return "", err
	}
	return resp.StatusText, nil
}

// bdat sends the message as one last chunk (RFC 3030): the bytes go as
// they are, with no dot-stuffing on either side (profiled, stuffing a 15
// KB body byte by byte cost the client and the receiver more than the
// rest of the exchange). The go-smtp client has no BDAT, so the command
// goes on the connection it talks over; its reader holds nothing here
// (every earlier reply was read whole and servers send nothing unasked).
func bdat(cn *conn, data []byte) (string, error) {
	timeout := cn.c.SubmissionTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	_ = cn.raw.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = cn.raw.SetDeadline(time.Time{}) }()
	bufs := net.Buffers{[]byte("BDAT " + strconv.Itoa(len(data)) + " LAST\r\n"), data}
	if _, err := bufs.WriteTo(cn.raw); err != nil {
		return "", errBroken{err: err}
	}
	if cn.r == nil {
		cn.r = textproto.NewReader(bufio.NewReaderSize(cn.raw, 512))
	}
	lines, code, err := readReply(cn.r)
	if err != nil {
		return "", errBroken{err: err}
	}
	if code != 250 {
		return "", replyError(code, lines)
	}
	return strings.Join(lines, "\n"), nil // as go-smtp's DataResponse has it
}

// step is one command's entry: its reply from err (a server's refusal, or
// a broken session: no code), else 250 with text when the server's text
// is known.
func step(command string, began time.Time, err error, text string) Step {
	st := Step{Command: command, Millis: time.Since(began).Milliseconds(), Code: 250, Text: text}
	var se *smtp.SMTPError
	switch {
	case errors.As(err, &se):
		st.Code, st.Text = se.Code, se.Message
		if se.EnhancedCode != smtp.NoEnhancedCode && se.EnhancedCode != (smtp.EnhancedCode{}) {
			st.Enhanced = fmt.Sprintf("%d.%d.%d", se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2])
		}
	case err != nil:
		st.Code, st.Text = 0, err.Error()
	}
	return st
}

// withSteps appends steps to the recipients at idx (all when idx is nil).
func withSteps(out []RcptResult, idx []int, steps []Step) {
	if idx == nil {
		for i := range out {
			out[i].Steps = append(out[i].Steps, steps...)
		}
		return
	}
	for _, i := range idx {
		out[i].Steps = append(out[i].Steps, steps...)
	}
}

// applyReply records a server reply on the recipients at idx (all when idx
// is nil). It returns false when err is not a server reply.
func applyReply(out []RcptResult, idx []int, err error) bool {
	var se *smtp.SMTPError
	if !errors.As(err, &se) {
		return false
	}
	set := func(r *RcptResult) {
		r.Code = se.Code
		r.Message = se.Message
		if se.EnhancedCode != smtp.NoEnhancedCode && se.EnhancedCode != (smtp.EnhancedCode{}) {
			r.Enhanced = fmt.Sprintf("%d.%d.%d", se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2])
		}
		r.Temporary = se.Code >= 400 && se.Code < 500
	}
	if idx == nil {
		for i := range out {
			set(&out[i])
		}
		return true
	}
	for _, i := range idx {
		set(&out[i])
	}
	return true
}

// failAll gives every recipient the same transport failure.
func failAll(rcpts []string, host string, err error, temporary bool) []RcptResult {
	out := make([]RcptResult, len(rcpts))
	for i, r := range rcpts {
		out[i] = RcptResult{Rcpt: r, Host: host, Message: err.Error(), Temporary: temporary, Stage: StageConnect, Timeout: IsTimeout(err)}
	}
	return out
}

// IsTimeout reports whether err is a server that did not answer in time.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

// validEnvelope refuses addresses that would break the SMTP command line.
func validEnvelope(env Envelope) error {
	if len(env.To) == 0 {
		return errors.New("outbound: envelope has no recipients")
	}
	for _, a := range append([]string{env.From}, env.To...) {
		if strings.ContainsAny(a, "\r\n<>") {
			return fmt.Errorf("outbound: invalid envelope address %q", a)
		}
	}
	if env.Source != "" {
		if _, err := netip.ParseAddr(env.Source); err != nil {
			return fmt.Errorf("outbound: invalid source address %q", env.Source)
		}
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
