"""The dashboard in a real browser: log in through the form, pages render with their vendored assets."""


def test_it_logs_in_and_loads_htmx_from_the_app(admin_page, harness_server):
    admin_page.goto(f"{harness_server.url}/coverage/")
    assert admin_page.locator("h1").inner_text() == "Provider test coverage"
    assert admin_page.evaluate("typeof htmx") == "object"
    assert admin_page.evaluate("htmx.version") == "2.0.11"


def test_it_sends_an_anonymous_browser_to_the_login_page(browser, harness_server, transactional_db):
    page = browser.new_page()
    page.goto(f"{harness_server.url}/coverage/")
    assert "/login/" in page.url
    page.close()
