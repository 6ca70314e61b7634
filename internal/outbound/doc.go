// Package outbound turns a send into bytes on a remote SMTP server: MIME
// assembly (RFC 5322, RFC 2045-2049, RFC 2047 for non-ASCII headers), DKIM
// signing (RFC 6376, relaxed/relaxed), SMTP delivery through a relay
// (RFC 5321, STARTTLS RFC 3207, AUTH PLAIN RFC 4954) or directly to each
// recipient domain's MX hosts (RFC 5321 section 5, null MX RFC 7505),
// classification of SMTP replies into hard and soft bounces (RFC 3463
// enhanced status codes) and VERP return paths.
//
// Nothing here touches the database; the deliver job composes these parts.
package outbound
