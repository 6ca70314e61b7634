package contacts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"

	"github.com/emersion/go-vcard"

	"mailroom/internal/apierr"
	"mailroom/internal/store"
)

// vCard limits: the spec's 1000 cards per call, and a bound on properties
// per card so a card of 10,000 lines is refused, not stored.
const (
	MaxVCards          = 1000
	MaxVCardProperties = 200
)

// ParseVCards reads RFC 6350 cards: EMAIL (the preferred one) is the
// address, N (else FN) the names, CATEGORIES the tags. A card that cannot
// be used refuses the whole call, naming the card.
func ParseVCards(text string) ([]NewContact, error) {
	dec := vcard.NewDecoder(strings.NewReader(text))
	var out []NewContact
	for n := 1; ; n++ {
		card, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, apierr.InvalidRequest("vCard %d does not parse: %s.", n, strings.TrimPrefix(err.Error(), "vcard: "))
		}
		if n > MaxVCards {
			return nil, apierr.InvalidRequest("A call takes at most %d vCards.", MaxVCards).WithNext("Send the cards in several calls.")
		}
		props := 0
		for _, fs := range card {
			props += len(fs)
		}
		if props > MaxVCardProperties {
			return nil, apierr.InvalidRequest("vCard %d has %d properties; at most %d are accepted.", n, props, MaxVCardProperties)
		}
		email := card.PreferredValue(vcard.FieldEmail)
		if email == "" {
			return nil, apierr.InvalidRequest("vCard %d has no EMAIL.", n)
		}
		e, err := NormalizeEmail(email)
		if err != nil {
			return nil, apierr.InvalidRequest("vCard %d: EMAIL %s.", n, err.Error())
		}
		c := NewContact{Email: e}
		if name := card.Name(); name != nil {
			c.FirstName, c.LastName = name.GivenName, name.FamilyName
		}
		if c.FirstName == "" && c.LastName == "" {
			fn := strings.TrimSpace(card.PreferredValue(vcard.FieldFormattedName))
			if i := strings.LastIndexByte(fn, ' '); i > 0 {
				c.FirstName, c.LastName = fn[:i], fn[i+1:]
			} else {
				c.FirstName = fn
			}
		}
		// Every CATEGORIES property counts (the library reads only one).
		for _, f := range card[vcard.FieldCategories] {
			for _, t := range strings.Split(f.Value, ",") {
				if t = strings.TrimSpace(t); t != "" {
					c.Tags = append(c.Tags, t)
				}
			}
		}
		if _, err := NormalizeTags(c.Tags); err != nil {
			return nil, apierr.InvalidRequest("vCard %d: %s", n, apiMessage(err))
		}
		for field, v := range map[string]string{"first name": c.FirstName, "last name": c.LastName} {
			if err := checkName(field, v); err != nil {
				return nil, apierr.InvalidRequest("vCard %d: %s", n, apiMessage(err))
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, apierr.InvalidRequest("vcard holds no card (BEGIN:VCARD ... END:VCARD).")
	}
	return out, nil
}

// EncodeVCards writes contacts as vCard 4.0, each tag as a CATEGORIES.
func EncodeVCards(cs []Contact) ([]byte, error) {
	var b bytes.Buffer
	enc := vcard.NewEncoder(&b)
	for _, c := range cs {
		card := vcard.Card{}
		card.SetValue(vcard.FieldVersion, "4.0")
		card.SetValue(vcard.FieldUID, c.ID)
		card.SetValue(vcard.FieldEmail, c.Email)
		card.SetName(&vcard.Name{GivenName: c.FirstName, FamilyName: c.LastName})
		fn := strings.TrimSpace(c.FirstName + " " + c.LastName)
		if fn == "" {
			fn = c.Email
		}
		card.SetValue(vcard.FieldFormattedName, fn)
		// One CATEGORIES per tag: the library escapes the commas of a
		// joined list, which would read back as one tag.
		for _, t := range c.Tags {
			card.Add(vcard.FieldCategories, &vcard.Field{Value: t})
		}
		if err := enc.Encode(card); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// SkippedCard is a card not created because its address is taken.
type SkippedCard struct {
	Card   int
	Email  string
	Reason string
}

// CreateMany adds contacts in one transaction; an address the workspace
// already has (or repeated in the call) is skipped and reported.
func (s *Service) CreateMany(ctx context.Context, workspaceID string, in []NewContact) ([]Contact, []SkippedCard, error) {
	created := []Contact{}
	skipped := []SkippedCard{}
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		created, skipped = created[:0], skipped[:0]
		seen := map[string]bool{}
		now := s.clock.Now()
		for i, nc := range in {
			if seen[nc.Email] {
				skipped = append(skipped, SkippedCard{Card: i + 1, Email: nc.Email, Reason: "repeats an earlier card"})
				continue
			}
			seen[nc.Email] = true
			if _, err := contactByEmail(ctx, tx, workspaceID, nc.Email); err == nil {
				skipped = append(skipped, SkippedCard{Card: i + 1, Email: nc.Email, Reason: "contact_exists"})
				continue
			}
			tags, err := NormalizeTags(nc.Tags)
			if err != nil {
				return err
			}
			c := Contact{ID: newContactID(), WorkspaceID: workspaceID, Email: nc.Email, FirstName: nc.FirstName, LastName: nc.LastName,
				Attributes: map[string]string{}, Tags: []string{}, CreatedAt: now, UpdatedAt: now}
			if err := insertContact(ctx, tx, c); err != nil {
				return err
			}
			if err := insertEvent(ctx, tx, workspaceID, EventContactCreated, c.ID, createdData(c), now); err != nil {
				return err
			}
			if _, err := s.setTagsTx(ctx, tx, &c, tags, now); err != nil {
				return err
			}
			created = append(created, c)
		}
		return nil
	})
	return created, skipped, err
}
