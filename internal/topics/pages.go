package topics

import (
	"context"
	"strings"
)

// Page is what a hosted page shows for a link: the address, its standing
// on the live topics, and for an unsubscribe link the topic it names (nil:
// every topic).
type Page struct {
	WorkspaceID string
	Email       string
	Topic       *Topic
	Preferences []Preference
}

// OpenPreferencePage checks a preference link and reads what its page
// shows; it changes nothing. A tampered, foreign or expired link answers
// 400 invalid_link.
func (s *Service) OpenPreferencePage(ctx context.Context, token string) (Page, error) {
	return s.page(ctx, purposePreferences, token)
}

// OpenUnsubscribePage is OpenPreferencePage for a one-click link (the page
// a GET shows, with a button; a GET changes nothing).
func (s *Service) OpenUnsubscribePage(ctx context.Context, token string) (Page, error) {
	return s.page(ctx, purposeUnsubscribe, token)
}

func (s *Service) page(ctx context.Context, purpose, token string) (Page, error) {
	l, err := s.open(purpose, token)
	if err != nil {
		return Page{}, err
	}
	p := Page{WorkspaceID: l.WorkspaceID, Email: l.Email}
	if l.TopicID != "" {
		t, err := topicByRef(ctx, s.db, l.WorkspaceID, l.TopicID)
		if err != nil {
			return Page{}, errBadLink()
		}
		p.Topic = &t
	}
	p.Preferences, err = preferences(ctx, s.db, l.WorkspaceID, l.Email, "")
	return p, err
}

// SavePreferencePage applies the preference form: each shown topic key is
// switched on when it is in on, off otherwise (required topics stay on;
// keys the form did not show are left alone).
func (s *Service) SavePreferencePage(ctx context.Context, token string, shown, on []string) (Page, error) {
	l, err := s.open(purposePreferences, token)
	if err != nil {
		return Page{}, err
	}
	want := map[string]bool{}
	for _, k := range on {
		want[k] = true
	}
	for _, k := range shown {
		if !ValidKey(k) {
			continue
		}
		t, err := liveTopic(ctx, s.db, l.WorkspaceID, k)
		if err != nil || t.Key != k || t.Required {
			continue // gone since the page was shown, or not switchable
		}
		if err := setPreference(ctx, s.db, l.WorkspaceID, t.ID, l.Email, want[k], SourcePreferencePage, s.clock.Now()); err != nil {
			return Page{}, err
		}
	}
	return s.page(ctx, purposePreferences, token)
}

// UnsubscribeAllPage is the preference page's "unsubscribe from all".
func (s *Service) UnsubscribeAllPage(ctx context.Context, token string) (Page, error) {
	l, err := s.open(purposePreferences, token)
	if err != nil {
		return Page{}, err
	}
	if _, err := s.SetPreference(ctx, l.WorkspaceID, l.Email, "", false, SourcePreferencePage); err != nil {
		return Page{}, err
	}
	return s.page(ctx, purposePreferences, token)
}

// OneClick acts on a one-click link (RFC 8058): the address is switched
// off the link's topic, or off everything for a link without one. Using it
// again changes nothing more. A topic archived or made required since the
// mail went out is left as it is.
func (s *Service) OneClick(ctx context.Context, token, source string) (Page, error) {
	l, err := s.open(purposeUnsubscribe, token)
	if err != nil {
		return Page{}, err
	}
	if err := s.unsubscribe(ctx, l, source); err != nil {
		return Page{}, err
	}
	return s.page(ctx, purposeUnsubscribe, token)
}

// UnsubscribeEverything is the unsubscribe page's "everything from this
// sender": whatever topic the link names, the address is switched off
// every topic and its memberships are unsubscribed, as "unsubscribe from
// all" does. A mailbox provider's one-click never comes here.
func (s *Service) UnsubscribeEverything(ctx context.Context, token string) (Page, error) {
	l, err := s.open(purposeUnsubscribe, token)
	if err != nil {
		return Page{}, err
	}
	l.TopicID = ""
	if err := s.unsubscribe(ctx, l, SourceUnsubscribePage); err != nil {
		return Page{}, err
	}
	return s.page(ctx, purposeUnsubscribe, token)
}

func (s *Service) unsubscribe(ctx context.Context, l Link, source string) error {
	if l.TopicID == "" {
		_, err := s.SetPreference(ctx, l.WorkspaceID, l.Email, "", false, source)
		return err
	}
	t, err := topicByRef(ctx, s.db, l.WorkspaceID, l.TopicID)
	if err != nil || t.ID != l.TopicID || t.Required || t.Archived() {
		return nil
	}
	return setPreference(ctx, s.db, l.WorkspaceID, t.ID, l.Email, false, source, s.clock.Now())
}

// UnsubscribeMail acts on mail sent to the unsubscribe address: the token
// is the subject's last word ("unsubscribe <token>", with or without a
// reply prefix). A subject without a valid token answers invalid_link and
// changes nothing.
func (s *Service) UnsubscribeMail(ctx context.Context, subject string) error {
	f := strings.Fields(subject)
	if len(f) == 0 {
		return errBadLink()
	}
	l, err := s.open(purposeUnsubscribe, f[len(f)-1])
	if err != nil {
		return err
	}
	return s.unsubscribe(ctx, l, SourceMailto)
}
