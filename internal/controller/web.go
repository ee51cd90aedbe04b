package controller

import (
	"context"
	"net/http"
	"strings"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/check"
	"github.com/fullpipe/fullpipe/internal/web"
)

// webOps is what the web page asks of the controller: the API's own
// token cache and schedule rules (package check), so a form and a PUT
// are judged alike.
type webOps struct{ c *Controller }

func (o webOps) Authenticate(ctx context.Context, secret string) (fleet.Token, error) {
	return o.c.tokens.authenticate(ctx, o.c.cfg.Store, secret, o.c.cfg.Now())
}

func (o webOps) CreateSchedule(ctx context.Context, s fleet.Schedule) (fleet.Schedule, error) {
	return o.c.newSchedule(ctx, s)
}

func (o webOps) UpdateSchedule(ctx context.Context, s fleet.Schedule) (fleet.Schedule, error) {
	return check.Update(ctx, o.c.cfg.Store, s, o.c.cfg.Now())
}

func (o webOps) DeleteSchedule(ctx context.Context, id string) error {
	return o.c.cfg.Store.DeleteSchedule(ctx, id, o.c.cfg.Now())
}

// newWeb makes the web page over the controller.
func (c *Controller) newWeb() (*web.Site, error) {
	return web.New(web.Config{Store: c.cfg.Store, Ops: webOps{c}, DownAfter: c.cfg.DownAfter, Now: c.cfg.Now,
		Secure: !c.cfg.Insecure, Log: c.cfg.Log})
}

// withWeb sends /ui/ to the web page and / there, the rest to api.
func withWeb(site http.Handler, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, web.Prefix):
			site.ServeHTTP(w, r)
		case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			http.Redirect(w, r, web.Prefix, http.StatusFound)
		default:
			api.ServeHTTP(w, r)
		}
	})
}
