package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"

	"github.com/sealtrail/sealtrail/tlog"
)

const digestUsage = "--file <digest.eml> --service-key <hex>"

// maxDigestFile bounds the email file; a digest is a few kilobytes.
const maxDigestFile = 4 << 20

func runVerifyDigest(e *env, args []string) error {
	fs := newFlagSet("verify digest")
	path := fs.String("file", "", "`file` holding the digest email (.eml, as saved from a mail client), or its text")
	var key keyFlag
	fs.Var(&key, "service-key", "trusted service Ed25519 public `key` (hex)")
	if err := parseFlags(e, fs, digestUsage, args); err != nil {
		return err
	}
	if err := required(fs, "file", "service-key"); err != nil {
		return err
	}
	data, err := readSmallFile(*path, maxDigestFile)
	if err != nil {
		return fmt.Errorf("--file: %w", err)
	}
	text, err := emailText(data)
	if err != nil {
		return fmt.Errorf("%s: %w", *path, err)
	}
	d, err := tlog.VerifyDigestText(key.key, text)
	switch {
	case errors.Is(err, tlog.ErrDigestEdited):
		te := &tamperError{msg: "digest_text_edited: the email's text is not what its signed facts say", err: err}
		fmt.Fprintf(e.stdout, "TAMPERED: %s\n", oneLine(te.Error()))
		return te
	case errors.Is(err, tlog.ErrBadSignature):
		te := &tamperError{msg: "bad_digest_signature", err: err}
		fmt.Fprintf(e.stdout, "TAMPERED: %s\n", oneLine(te.Error()))
		return te
	case err != nil:
		return fmt.Errorf("%s: %w", *path, err)
	}
	fmt.Fprintf(e.stdout, "project:      %s\n", d.ProjectID)
	fmt.Fprintf(e.stdout, "period:       %s\n", d.Period)
	fmt.Fprintf(e.stdout, "issued:       %s\n", d.Issued)
	for _, h := range d.Heads {
		fmt.Fprintf(e.stdout, "%-14s size %d, root %s\n", h.Stream+":", h.TreeSize, h.RootHash)
	}
	fmt.Fprintf(e.stdout, "OK: digest signed by service key %s, text unedited\n", hex.EncodeToString(key.key))
	return nil
}

// emailText returns the text/plain body of an email, decoded from its transfer
// encoding. A file that is not an email (no header block) is taken as the text itself.
func emailText(data []byte) (string, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil || len(msg.Header) == 0 {
		return string(data), nil
	}
	if ct := msg.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return "", fmt.Errorf("Content-Type %q: %w", ct, err)
		}
		if mt != "text/plain" {
			return "", fmt.Errorf("the email is %s, not the text/plain a digest is sent as", mt)
		}
	}
	var body io.Reader = msg.Body
	switch cte := strings.ToLower(strings.TrimSpace(msg.Header.Get("Content-Transfer-Encoding"))); cte {
	case "", "7bit", "8bit", "binary":
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, newlineStripper{body})
	default:
		return "", fmt.Errorf("unknown Content-Transfer-Encoding %q", cte)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return "", fmt.Errorf("decode the email body: %w", err)
	}
	return string(b), nil
}

// newlineStripper drops CR and LF, which base64 bodies wrap with.
type newlineStripper struct{ r io.Reader }

func (n newlineStripper) Read(p []byte) (int, error) {
	for {
		k, err := n.r.Read(p)
		j := 0
		for _, c := range p[:k] {
			if c != '\r' && c != '\n' {
				p[j] = c
				j++
			}
		}
		if j > 0 || err != nil {
			return j, err
		}
	}
}
