// Package browsertest holds the dashboard's tests in headless Chromium
// (chromedp): pages, live updates, actions and DNS rebinding, in a real
// browser. It is a module of its own so that Docket's module does not
// require a browser driver.
package browsertest
