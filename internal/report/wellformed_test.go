package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// voidElements have no end tag in HTML.
var voidElements = map[string]bool{"meta": true, "br": true, "hr": true, "img": true, "link": true, "input": true}

// wellFormed checks that page parses as HTML with every element closed in
// order, and that each inline SVG is well-formed XML on its own (a browser
// parses SVG more strictly than HTML).
func wellFormed(t *testing.T, page []byte) {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(page))
	var open []string
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("HTML: %v", z.Err())
			}
			break
		}
		name, _ := z.TagName()
		tag := string(name)
		switch tt {
		case html.StartTagToken:
			if !voidElements[tag] {
				open = append(open, tag)
			}
		case html.EndTagToken:
			if len(open) == 0 || open[len(open)-1] != tag {
				t.Fatalf("HTML: </%s> closes %v", tag, open)
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		t.Fatalf("HTML: unclosed %v", open)
	}
	svgs := svgRe.FindAll(page, -1)
	for _, svg := range svgs {
		d := xml.NewDecoder(bytes.NewReader(svg))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("SVG is not well-formed XML: %v\n%.300s", err, svg)
			}
		}
	}
	if n := strings.Count(string(page), "<svg"); n != len(svgs) {
		t.Fatalf("%d <svg, %d closed", n, len(svgs))
	}
}

var svgRe = regexp.MustCompile(`(?s)<svg .*?</svg>`)
