//go:build ignore

// Command backend is the upstream of the end-to-end tests and benchmarks: a
// tiny HTTP server on loopback that answers every request with 200 "ok", or
// with the status its X-Status header names (200-599), for
// the count_status tests.
//
//	go run backend.go -free-ports 3          # print 3 free loopback ports and exit
//	go run backend.go -port-file /tmp/port   # serve on a free port, written to the file
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	portFile := flag.String("port-file", "", "file to write the chosen port to")
	freePorts := flag.Int("free-ports", 0, "print this many free loopback ports and exit")
	flag.Parse()

	if *freePorts > 0 {
		var ls []net.Listener
		for i := 0; i < *freePorts; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				log.Fatal(err)
			}
			ls = append(ls, l)
			fmt.Println(l.Addr().(*net.TCPAddr).Port)
		}
		for _, l := range ls {
			l.Close()
		}
		return
	}

	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *portFile != "" {
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		if err := os.WriteFile(*portFile+".tmp", []byte(port+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(*portFile+".tmp", *portFile); err != nil {
			log.Fatal(err)
		}
	}
	body := []byte("ok\n")
	log.Fatal(http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/plain"}
		if v := r.Header["X-Status"]; len(v) == 1 {
			if code, err := strconv.Atoi(v[0]); err == nil && code >= 200 && code <= 599 {
				w.WriteHeader(code)
			}
		}
		w.Write(body)
	})))
}
