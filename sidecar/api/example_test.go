package api_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar/api"
)

// vault is a program's own Refresher: here a fixed table of refresh
// tokens instead of pinned's broker.
type vault map[string]api.Pair

func (v vault) Refresh(_ context.Context, service string, refreshToken secret.Secret) (api.Pair, error) {
	p, ok := v[string(refreshToken)]
	if !ok {
		return api.Pair{}, &api.RefreshError{Kind: api.RefreshReconnect, Code: "invalid_grant", Err: errors.New("unknown refresh token")}
	}
	return p, nil
}

// A sidecar takes any Refresher (sidecar.Config.Refresher). A failure it
// can classify is a *api.RefreshError; a Pair prints its tokens redacted.
func ExampleRefresher() {
	var r api.Refresher = vault{"rt_1": {Access: "gho_new", Refresh: "rt_2", ExpiresAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}
	p, err := r.Refresh(context.Background(), "github", "rt_1")
	fmt.Println(p, err)
	_, err = r.Refresh(context.Background(), "github", "rt_x")
	var re *api.RefreshError
	fmt.Println(errors.As(err, &re), re.Kind == api.RefreshReconnect, re.Code)
	// Output:
	// Pair{Access: [redacted], Refresh: [redacted], ExpiresAt: 2030-01-01T00:00:00Z} <nil>
	// true true invalid_grant
}
