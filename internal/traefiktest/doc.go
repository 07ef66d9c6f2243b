// Package traefiktest runs a real Traefik with this checkout's plugin, for
// end-to-end tests, as Traefik's own integration suite does: the binary
// started on a templated dynamic configuration with free loopback ports,
// stopped when the test ends, and polling waits instead of sleeps.
//
// A test starts an instance, renders its dynamic configuration from a
// fixture (a text/template file), starts it and drives it over HTTP:
//
//	be := e2etest.StartBackend(t)
//	tr := traefiktest.New(t, traefiktest.Options{})
//	tr.Render("fixtures/reload/dynamic.yml", map[string]any{"Backend": be.URL()})
//	tr.Start("/plain") // waits for the ping, then for /plain to answer 200
//	req, resp := e2etest.Get(t, tr.URL("/limited"))
//	if resp.Status != 429 {
//		t.Fatalf("%v: %v, want 429", req, resp)
//	}
//
// A later Render is a reload (Traefik watches the file); e2etest.GetRequest
// with conditions (StatusIs, BodyContains, HeaderIs) waits until it took
// effect, and its error names the condition that failed last. Stop, Kill
// and Start again restart the instance in the same directory, on the same
// ports. LogText, LogLines and Logged read Traefik's log since the last
// start.
//
// The binary is Traefik v3.6.12 (Version), built once by
// scripts/lib/traefik.sh into ${WINDOWLIMIT_CACHE:-~/.cache/windowlimit}
// (see Binary; WL_TRAEFIK names another one). When it is missing, a test
// fails saying how to build it, or skips when WL_TRAEFIK_SKIP=1.
//
// The backend, the requests and the waits, which the Caddy module's
// end-to-end tests use too, are in internal/e2etest.
package traefiktest
