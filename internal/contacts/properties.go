package contacts

import (
	"context"
	"strconv"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// Contact properties declare an attribute name with a type and a fallback
// (the Resend SDKs' contactProperties). A contact's value stays in its
// attributes; the fallback is what a broadcast renders for a contact that
// lacks it. Removing a property leaves every contact's value in place.

// Property types, as Resend has them.
const (
	PropertyString = "string"
	PropertyNumber = "number"
)

// MaxProperties caps a workspace's declared properties (one list answer
// holds them all).
const MaxProperties = 200

// Property is one declared contact attribute.
type Property struct {
	ID          string
	WorkspaceID string
	Key         string
	Type        string // PropertyString or PropertyNumber
	// Fallback is the value's text (a number's JSON spelling); nil: none.
	Fallback  *string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Value is a fallback as given: Number says the JSON value was a number
// (Text is its spelling), else it was a string.
type Value struct {
	Text   string
	Number bool
}

// reservedKeys are the contact's own fields, which every render already
// supplies.
var reservedKeys = map[string]bool{"email": true, "first_name": true, "last_name": true, "contact_id": true}

func errPropertyNotFound() error { return apierr.NotFound("contact_property") }

// checkFallback refuses a fallback of another type than the property's
// and returns its stored text.
func checkFallback(typ string, v *Value) (*string, error) {
	if v == nil {
		return nil, nil
	}
	switch {
	case typ == PropertyNumber && !v.Number:
		return nil, apierr.InvalidRequest("fallback_value must be a number for a property of type number.")
	case typ == PropertyString && v.Number:
		return nil, apierr.InvalidRequest("fallback_value must be a string for a property of type string.")
	case typ == PropertyNumber:
		if _, err := strconv.ParseFloat(v.Text, 64); err != nil {
			return nil, apierr.InvalidRequest("fallback_value %q is not a number this server can hold.", apierr.Clip(v.Text, 40))
		}
	}
	if err := CheckAttrValue("fallback_value", v.Text); err != nil {
		return nil, err
	}
	t := v.Text
	return &t, nil
}

// CreateProperty declares a property; its key must be new to the workspace.
func (s *Service) CreateProperty(ctx context.Context, workspaceID, key, typ string, fallback *Value) (Property, error) {
	if err := CheckAttrName(key); err != nil {
		return Property{}, err
	}
	if reservedKeys[key] {
		return Property{}, apierr.InvalidRequest("key %q is a contact field of its own; choose another name.", key)
	}
	if typ != PropertyString && typ != PropertyNumber {
		return Property{}, apierr.InvalidRequest("type must be string or number; got %q.", apierr.Clip(typ, 20))
	}
	fb, err := checkFallback(typ, fallback)
	if err != nil {
		return Property{}, err
	}
	now := s.clock.Now()
	p := Property{ID: ids.New("cprop"), WorkspaceID: workspaceID, Key: key, Type: typ, Fallback: fb, CreatedAt: now, UpdatedAt: now}
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		n, err := countProperties(ctx, tx, workspaceID)
		if err != nil {
			return err
		}
		if n >= MaxProperties {
			return apierr.Invalid422("too_many_properties", "A workspace declares at most %d contact properties; remove one first.", MaxProperties)
		}
		if err := insertProperty(ctx, tx, p); err != nil {
			if store.IsUniqueViolation(err) {
				return apierr.Conflict("contact_property_exists", "A contact property with the key %s already exists.", key).
					WithNext("Change its fallback with PATCH /v1/contact-properties/{id}.")
			}
			return err
		}
		return nil
	})
	return p, err
}

// Property reads one property of the workspace.
func (s *Service) Property(ctx context.Context, workspaceID, id string) (Property, error) {
	p, err := propertyByID(ctx, s.db, workspaceID, id)
	return p, notFound(err, errPropertyNotFound)
}

// Properties lists the workspace's properties by key.
func (s *Service) Properties(ctx context.Context, workspaceID string) ([]Property, error) {
	return listProperties(ctx, s.db, workspaceID)
}

// SetPropertyFallback replaces a property's fallback (nil clears it); its
// key and type do not change.
func (s *Service) SetPropertyFallback(ctx context.Context, workspaceID, id string, fallback *Value) (Property, error) {
	var p Property
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if p, err = propertyByID(ctx, tx, workspaceID, id); err != nil {
			return notFound(err, errPropertyNotFound)
		}
		if p.Fallback, err = checkFallback(p.Type, fallback); err != nil {
			return err
		}
		p.UpdatedAt = s.clock.Now()
		return updateProperty(ctx, tx, p)
	})
	return p, err
}

// DeleteProperty removes a property; contacts keep their values.
func (s *Service) DeleteProperty(ctx context.Context, workspaceID, id string) error {
	found, err := deleteProperty(ctx, s.db, workspaceID, id)
	if err == nil && !found {
		err = errPropertyNotFound()
	}
	return err
}

// Fallbacks are the workspace's declared fallbacks by key, for a render
// to give a contact that lacks the attribute.
func (s *Service) Fallbacks(ctx context.Context, workspaceID string) (map[string]string, error) {
	ps, err := listProperties(ctx, s.db, workspaceID)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range ps {
		if p.Fallback != nil {
			out[p.Key] = *p.Fallback
		}
	}
	return out, nil
}
