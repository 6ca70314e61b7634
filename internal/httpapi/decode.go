package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"mailroom/internal/apierr"
)

// Body size caps. The spec's largest body is a send with 40 MB of base64
// attachments; a batch may carry several.
const (
	maxBody      = 1 << 20
	maxSendBody  = 48 << 20
	maxBatchBody = 96 << 20
)

var errTooLarge = apierr.New(http.StatusRequestEntityTooLarge, "request_too_large", "The request body is larger than this route accepts.")

// readBody reads a JSON body up to max bytes, refusing form encodings and
// other non-JSON content types.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	body, _, err := readUpTo(r, max)
	return body, err
}

// readUpTo is readBody that, refusing a body over max with errTooLarge,
// also answers what it read of it: nothing when the declared length was
// over, the first max+1 bytes of a body of unknown length (the rest is
// still in r.Body).
func readUpTo(r *http.Request, max int64) (body, read []byte, err error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return nil, nil, apierr.InvalidRequest("Content-Type %q is not accepted; send application/json.", ct)
		}
	}
	if n := r.ContentLength; n > max {
		return nil, nil, errTooLarge
	} else if n >= 0 {
		// The length is known: one buffer of that size, where ReadAll grew
		// one from 512 bytes. net/http ends the body at the length.
		body = make([]byte, n)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, max+1))
		if err == nil && int64(len(body)) > max {
			return nil, body, errTooLarge
		}
	}
	if err != nil {
		return nil, nil, bodyError(err)
	}
	return body, nil, nil
}

// bodyError is the answer to a body that could not be read: the limit's
// own error when bodylimit cut it (408 request_timeout, 503 server_busy),
// else invalid_request.
func bodyError(err error) error {
	if e, ok := apierr.As(err); ok {
		return e
	}
	return apierr.InvalidRequest("Could not read the request body.")
}

// decodeJSON parses body into dst strictly: it must be valid UTF-8 JSON, a
// single object, of the right field types, with no unknown fields.
func decodeJSON(body []byte, dst any) error {
	if err := checkJSONObject(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return apierr.New(http.StatusBadRequest, "invalid_json", "The body holds more than one JSON value.")
	}
	return nil
}

// checkJSONObject answers invalid_json for bytes that are not JSON and
// invalid_request for JSON that is not an object.
func checkJSONObject(body []byte) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return apierr.New(http.StatusBadRequest, "invalid_json", "The request body is empty; send a JSON object.")
	}
	if !utf8.Valid(body) {
		return apierr.New(http.StatusBadRequest, "invalid_json", "The request body is not valid UTF-8.")
	}
	if !json.Valid(trimmed) {
		return apierr.New(http.StatusBadRequest, "invalid_json", "The request body is not valid JSON.")
	}
	if trimmed[0] != '{' {
		return apierr.InvalidRequest("The request body must be a JSON object.")
	}
	return nil
}

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return apierr.InvalidRequest("The request body must be a JSON object.")
		}
		return apierr.InvalidRequest("Field %q must be %s.", field, jsonKind(te.Type.Kind().String()))
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		return apierr.InvalidRequest("Unknown field %s.", strings.TrimPrefix(msg, "json: unknown field "))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
		return apierr.New(http.StatusBadRequest, "invalid_json", "The request body is not valid JSON.")
	}
	return apierr.InvalidRequest("%s", fmt.Sprint(err))
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "bool":
		return "a boolean"
	case "ptr":
		return "of another type"
	}
	if strings.HasPrefix(k, "int") || strings.HasPrefix(k, "uint") || strings.HasPrefix(k, "float") {
		return "a number"
	}
	return "of another type"
}

// decodeRequest reads and strictly decodes a JSON body in one step.
func decodeRequest(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := readBody(w, r, maxBody)
	if err != nil {
		return err
	}
	return decodeJSON(body, dst)
}

// writeJSON encodes v as the answer. The answer structs that replaced maps
// declare their fields in sorted order, so the bytes are those the maps gave.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal_error","message":"Could not encode the response.","next":null}}`)
	}
	w.Header()["Content-Type"] = []string{"application/json"}
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
