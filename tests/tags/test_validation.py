"""Every tag definition rule refused with 400 naming the field (docs/api.md, "Tag definitions")."""

from __future__ import annotations

import pytest

from tags.models import TagDefinition
from tests.conftest import assert_error
from tests.factories import tag_payload, web_component

UPSERT = "/api/chat-admin/tagdef"

STORE = {"storeBucket": "widgets-bucket", "storeKey": "demo/chart.js"}

REFUSED = [
    # rule 1: names
    pytest.param(
        tag_payload(tag="my tag"), "tagDefinition.tag: must contain only letters, digits, hyphens and underscores", id="tag-space"
    ),
    pytest.param(tag_payload(tag="chart.v2"), "tagDefinition.tag: must contain only letters", id="tag-dot"),
    pytest.param(tag_payload(scope="my/scope"), "tagDefinition.scope: must contain only letters", id="scope-slash"),
    pytest.param(tag_payload(scope="a" * 101), "tagDefinition.scope:", id="scope-too-long"),
    pytest.param(tag_payload(tag=None), "tagDefinition.tag: This field is required", id="tag-missing"),
    pytest.param(tag_payload(scope=None), "tagDefinition.scope: This field is required", id="scope-missing"),
    # rules 2, 3: enums
    pytest.param(
        tag_payload(status="archived"),
        'tagDefinition.status: "archived" is not a valid status: must be one of enabled, disabled, retired',
        id="status",
    ),
    pytest.param(tag_payload(status=None), "tagDefinition.status: This field is required", id="status-missing"),
    pytest.param(
        tag_payload(usageMode="everywhere"),
        'tagDefinition.usageMode: "everywhere" is not a valid usage mode: must be one of global, chat-app',
        id="usage-mode",
    ),
    pytest.param(tag_payload(usageMode=None), "tagDefinition.usageMode: This field is required", id="usage-mode-missing"),
    # rule 4: widget type
    pytest.param(
        tag_payload(widget={"type": "fancy"}),
        "tagDefinition.widget.type: invalid widget type 'fancy': "
        "the allowed types are built-in, custom-compiled-in, web-component, pass-through",
        id="widget-type",
    ),
    pytest.param(tag_payload(widget={"builtInType": "chart"}), "tagDefinition.widget.type: is required", id="widget-type-missing"),
    pytest.param(tag_payload(widget="built-in"), "tagDefinition.widget: must be an object", id="widget-not-object"),
    pytest.param(tag_payload(widget=None), "tagDefinition.widget: This field is required", id="widget-missing"),
    pytest.param(
        tag_payload(widget={"type": "built-in"}),
        "tagDefinition.widget.builtInType: is required for a built-in widget: one of chart, image, prompt",
        id="built-in-type-missing",
    ),
    pytest.param(
        tag_payload(widget={"type": "built-in", "builtInType": "table"}),
        "tagDefinition.widget.builtInType: 'table' is not a built-in widget type",
        id="built-in-type",
    ),
    # web component location
    pytest.param(
        tag_payload(widget={"type": "web-component"}),
        "tagDefinition.widget.webComponent: is required for a web-component widget",
        id="web-component-missing",
    ),
    pytest.param(
        tag_payload(widget=web_component()), "tagDefinition.widget.webComponent: must give exactly one location", id="no-location"
    ),
    pytest.param(
        tag_payload(widget=web_component(store=STORE, url="https://cdn.example.com/w.js")),
        "tagDefinition.widget.webComponent: must give exactly one location",
        id="two-locations",
    ),
    pytest.param(tag_payload(widget=web_component(store=STORE, **STORE)), "(given: store, storeBucket/storeKey)", id="store-and-flat"),
    pytest.param(
        tag_payload(widget=web_component(store="widgets/chart.js")),
        "tagDefinition.widget.webComponent.store: must be an object",
        id="store-not-object",
    ),
    pytest.param(
        tag_payload(widget=web_component(storeBucket="widgets-bucket")),
        "tagDefinition.widget.webComponent.storeKey: is required",
        id="flat-key-missing",
    ),
    pytest.param(
        tag_payload(widget=web_component(storeKey="a.js")),
        "tagDefinition.widget.webComponent.storeBucket: is required",
        id="flat-bucket-missing",
    ),
    pytest.param(
        tag_payload(widget=web_component(url="ftp://cdn.example.com/w.js")),
        "tagDefinition.widget.webComponent.url: must be an http or https URL",
        id="url-scheme",
    ),
    pytest.param(
        tag_payload(widget=web_component(url="https:///w.js")),
        "tagDefinition.widget.webComponent.url: must be an http or https URL",
        id="url-host",
    ),
    # rule 5: bucket and key names
    pytest.param(
        tag_payload(widget=web_component(store={**STORE, "storeBucket": "ab"})),
        "tagDefinition.widget.webComponent.store.storeBucket: must be a valid bucket name of 3 to 63",
        id="bucket-short",
    ),
    pytest.param(
        tag_payload(widget=web_component(store={**STORE, "storeBucket": "b" * 64})),
        "store.storeBucket: must be a valid bucket name of 3 to 63",
        id="bucket-long",
    ),
    pytest.param(
        tag_payload(widget=web_component(store={**STORE, "storeBucket": "My_Bucket"})),
        "store.storeBucket: must be a valid bucket name: lowercase",
        id="bucket-case",
    ),
    pytest.param(
        tag_payload(widget=web_component(store={**STORE, "storeBucket": "-bucket"})),
        "store.storeBucket: must be a valid bucket name: lowercase",
        id="bucket-start",
    ),
    pytest.param(
        tag_payload(widget=web_component(store={**STORE, "storeBucket": "bucket."})),
        "store.storeBucket: must be a valid bucket name: lowercase",
        id="bucket-end",
    ),
    pytest.param(
        tag_payload(widget=web_component(store={**STORE, "storeBucket": "my..bucket"})),
        "store.storeBucket: must be a valid bucket name",
        id="bucket-dots",
    ),
    pytest.param(
        tag_payload(widget=web_component(store={**STORE, "storeBucket": "192.168.1.10"})),
        "store.storeBucket: must be a valid bucket name, not an IP address",
        id="bucket-ip",
    ),
    pytest.param(
        tag_payload(widget=web_component(storeBucket="Bad Bucket", storeKey="a.js")),
        "tagDefinition.widget.webComponent.storeBucket: must be a valid bucket name",
        id="flat-bucket",
    ),
    pytest.param(tag_payload(widget=web_component(store={**STORE, "storeKey": ""})), "store.storeKey: is required", id="key-empty"),
    pytest.param(
        tag_payload(widget=web_component(store={**STORE, "storeKey": "é" * 513})),
        "store.storeKey: must be a valid object key of at most 1024 bytes",
        id="key-long-bytes",
    ),
    pytest.param(
        tag_payload(widget=web_component(store={**STORE, "storeKey": "a\nb.js"})),
        "store.storeKey: must be a valid object key without control characters",
        id="key-control",
    ),
    *[
        pytest.param(
            tag_payload(widget=web_component(store={**STORE, "storeKey": key})),
            "store.storeKey: must be names separated by single slashes, none of them . or ..",
            id=f"key-{name}",
        )
        for name, key in [
            ("parent", "../escape.js"),
            ("parent-inside", "demo/../../widgets-other/x.js"),
            ("leading-slash", "/demo/x.js"),
            ("double-slash", "demo//x.js"),
            ("dot", "demo/./x.js"),
            ("trailing-slash", "demo/"),
        ]
    ],
    pytest.param(
        tag_payload(widget=web_component(storeBucket="widgets-bucket", storeKey="../x.js")),
        "tagDefinition.widget.webComponent.storeKey: must be names separated by single slashes",
        id="flat-key-parent",
    ),
    pytest.param(
        tag_payload(widget=web_component(url="https://cdn.example.com/w.js", encoding="brotli")),
        "tagDefinition.widget.webComponent.encoding: must be one of gzip, gzip+base64, none",
        id="encoding",
    ),
    pytest.param(
        tag_payload(widget=web_component(url="https://cdn.example.com/w.js", customElementName="Chart-Widget")),
        "tagDefinition.widget.webComponent.customElementName: must be a valid custom element name",
        id="element-uppercase",
    ),
    pytest.param(
        tag_payload(widget=web_component(url="https://cdn.example.com/w.js", customElementName="chartwidget")),
        "customElementName: must be a valid custom element name",
        id="element-no-hyphen",
    ),
    pytest.param(
        tag_payload(widget=web_component(url="https://cdn.example.com/w.js", customElementName="font-face")),
        "customElementName: must be a valid custom element name",
        id="element-reserved",
    ),
    # required fields
    pytest.param(
        tag_payload(llmInstructionsMd=None),
        "tagDefinition.llmInstructionsMd: is required when canBeGeneratedByLlm is true",
        id="instructions-missing",
    ),
    pytest.param(
        tag_payload(llmInstructionsMd="   "),
        "tagDefinition.llmInstructionsMd: is required when canBeGeneratedByLlm is true",
        id="instructions-blank",
    ),
    pytest.param(tag_payload(description=None), "tagDefinition.description: This field is required", id="description-missing"),
    pytest.param(tag_payload(description=""), "tagDefinition.description: This field may not be blank", id="description-blank"),
    pytest.param(tag_payload(renderingContexts=None), "tagDefinition.renderingContexts: This field is required", id="contexts-missing"),
    pytest.param(tag_payload(canBeGeneratedByLlm=None), "tagDefinition.canBeGeneratedByLlm: This field is required", id="llm-flag-missing"),
    pytest.param(
        tag_payload(canBeGeneratedByTool=None), "tagDefinition.canBeGeneratedByTool: This field is required", id="tool-flag-missing"
    ),
    pytest.param(
        tag_payload(canBeGeneratedByTool="sometimes"), "tagDefinition.canBeGeneratedByTool: Must be a valid boolean", id="tool-flag-type"
    ),
    # rendering contexts
    pytest.param(
        tag_payload(renderingContexts={"sidebar": True}),
        "tagDefinition.renderingContexts.sidebar: unknown rendering context: "
        "the allowed ones are inline, canvas, dialog, spotlight, static, hero",
        id="context-unknown",
    ),
    pytest.param(tag_payload(renderingContexts=["inline"]), "tagDefinition.renderingContexts: must be an object", id="contexts-list"),
    pytest.param(
        tag_payload(renderingContexts={"inline": "yes"}),
        "tagDefinition.renderingContexts.inline: must be true, false, or an object",
        id="context-string",
    ),
    pytest.param(
        tag_payload(renderingContexts={"canvas": {"width": 3}}),
        "tagDefinition.renderingContexts.canvas.enabled: is required: true or false",
        id="context-enabled-missing",
    ),
    pytest.param(
        tag_payload(renderingContexts={"spotlight": {"enabled": True, "displayOrder": "first"}}),
        "tagDefinition.renderingContexts.spotlight.displayOrder: must be a number",
        id="spotlight-order",
    ),
    pytest.param(
        tag_payload(renderingContexts={"spotlight": {"enabled": True, "isDefault": "yes"}}),
        "renderingContexts.spotlight.isDefault: must be true or false",
        id="spotlight-default",
    ),
    pytest.param(
        tag_payload(renderingContexts={"spotlight": {"enabled": True, "singleton": 1}}),
        "renderingContexts.spotlight.singleton: must be true or false",
        id="spotlight-singleton",
    ),
    pytest.param(
        tag_payload(renderingContexts={"spotlight": {"enabled": True, "showInUnpinnedMenu": "no"}}),
        "renderingContexts.spotlight.showInUnpinnedMenu: must be true or false",
        id="spotlight-menu",
    ),
    pytest.param(
        tag_payload(renderingContexts={"spotlight": {"enabled": True, "autoCreateInstance": "no"}}),
        "renderingContexts.spotlight.autoCreateInstance: must be true or false",
        id="spotlight-autocreate",
    ),
    pytest.param(
        tag_payload(renderingContexts={"spotlight": {"enabled": True, "startCollapsed": 0}}),
        "renderingContexts.spotlight.startCollapsed: must be true or false",
        id="spotlight-collapsed",
    ),
    pytest.param(
        tag_payload(renderingContexts={"spotlight": {"enabled": True, "displayorder": 1}}),
        "renderingContexts.spotlight.displayorder: unknown spotlight option",
        id="spotlight-typo",
    ),
    pytest.param(
        tag_payload(renderingContexts={"static": {"enabled": True, "shutDownAfterMs": -1}}),
        "tagDefinition.renderingContexts.static.shutDownAfterMs: must be a number of at least 0",
        id="static-negative",
    ),
    pytest.param(
        tag_payload(renderingContexts={"static": {"enabled": True, "shutDownAfterMs": "1s"}}),
        "renderingContexts.static.shutDownAfterMs: must be a number of at least 0",
        id="static-string",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "autoCreateInstance": "yes"}}),
        "renderingContexts.hero.autoCreateInstance: must be true or false",
        id="hero-autocreate",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "startCollapsed": "no"}}),
        "renderingContexts.hero.startCollapsed: must be true or false",
        id="hero-collapsed",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "sizing": "big"}}),
        "renderingContexts.hero.sizing: must be an object",
        id="hero-sizing",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "sizing": {"width": 300}}}),
        "tagDefinition.renderingContexts.hero.sizing.width: must be a CSS length string",
        id="hero-width-number",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "sizing": {"height": "tall"}}}),
        "renderingContexts.hero.sizing.height: must be a CSS length string",
        id="hero-height",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "sizing": {"minWidth": "200"}}}),
        "renderingContexts.hero.sizing.minWidth: must be a CSS length string",
        id="hero-min-width-unitless",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "sizing": {"maxWidth": "-5%"}}}),
        "renderingContexts.hero.sizing.maxWidth: must be a CSS length string",
        id="hero-max-width-negative",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "sizing": {"minHeight": "100px"}}}),
        "renderingContexts.hero.sizing.minHeight: must be a number of pixels",
        id="hero-min-height",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "sizing": {"maxHeight": -1}}}),
        "renderingContexts.hero.sizing.maxHeight: must be a number of pixels",
        id="hero-max-height",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "sizing": {"minHeight": 700, "maxHeight": 600}}}),
        "renderingContexts.hero.sizing.minHeight: must not be greater than maxHeight",
        id="hero-heights",
    ),
    pytest.param(
        tag_payload(renderingContexts={"hero": {"enabled": True, "sizing": {"depth": "3px"}}}),
        "renderingContexts.hero.sizing.depth: unknown sizing option",
        id="hero-sizing-unknown",
    ),
    # structured instructions
    pytest.param(
        tag_payload(llmInstructionsMd=None, llmInstructions="use it"),
        "tagDefinition.llmInstructions: must be a list of instruction items",
        id="items-not-list",
    ),
    pytest.param(
        tag_payload(llmInstructionsMd=None, llmInstructions=[{"type": "para", "text": "x"}]),
        "tagDefinition.llmInstructions[0].type: must be 'line' or 'block'",
        id="item-type",
    ),
    pytest.param(
        tag_payload(llmInstructionsMd=None, llmInstructions=[{"type": "line", "text": "ok"}, {"type": "line"}]),
        "tagDefinition.llmInstructions[1].text: is required for a line",
        id="line-text",
    ),
    pytest.param(
        tag_payload(llmInstructionsMd=None, llmInstructions=[{"type": "block", "lines": []}]),
        "tagDefinition.llmInstructions[0].title: is required for a block",
        id="block-title",
    ),
    pytest.param(
        tag_payload(llmInstructionsMd=None, llmInstructions=[{"type": "block", "title": "T"}]),
        "tagDefinition.llmInstructions[0].lines: is required for a block",
        id="block-lines",
    ),
    pytest.param(
        tag_payload(
            llmInstructionsMd=None, llmInstructions=[{"type": "block", "title": "T", "lines": [{"type": "line", "text": "a"}, "b"]}]
        ),
        "tagDefinition.llmInstructions[0].lines[1]: must be an object {type: 'line', text}",
        id="block-line",
    ),
    pytest.param(
        tag_payload(llmInstructionsMd=None, llmInstructions=[{"type": "block", "title": "T", "lines": [{"type": "line", "text": " "}]}]),
        "tagDefinition.llmInstructions[0].lines[0].text: is required for a line",
        id="block-line-text",
    ),
    # the older form
    pytest.param(
        {"scope": "demo", "tag": "old", "enabled": "yes", "llmInstructions": [], "widget": {"type": "pass-through"}},
        "tagDefinition.enabled: must be true or false",
        id="older-enabled",
    ),
]


@pytest.mark.parametrize(("definition", "message"), REFUSED)
def test_invalid_tag_definition_is_refused_naming_the_field(admin_client, definition, message):
    response = admin_client.post(UPSERT, {"tagDefinition": definition, "userId": "ops"}, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions=message)
    assert not TagDefinition.objects.exists()


def test_tag_definition_must_be_an_object(admin_client):
    assert_error(
        admin_client.post(UPSERT, {"tagDefinition": "demo.chart"}, format="json"), 400, "INVALID_REQUEST", mentions="tagDefinition:"
    )
    assert_error(
        admin_client.post(UPSERT, {"userId": "ops"}, format="json"),
        400,
        "INVALID_REQUEST",
        mentions="tagDefinition: This field is required",
    )


ACCEPTED = [
    pytest.param(tag_payload(tag="Chart_v2-b"), id="name-characters"),
    pytest.param(tag_payload(widget={"type": "custom-compiled-in"}), id="custom-compiled-in"),
    pytest.param(tag_payload(widget={"type": "pass-through"}), id="pass-through"),
    pytest.param(tag_payload(widget={"type": "built-in", "builtInType": "prompt"}), id="built-in-prompt"),
    pytest.param(tag_payload(widget=web_component(store=STORE, encoding="gzip+base64", customElementName="demo-chart")), id="store-object"),
    pytest.param(tag_payload(widget=web_component(storeBucket="my.widgets-1", storeKey="path/to/ünïcode chart.js")), id="store-flat"),
    pytest.param(tag_payload(widget=web_component(url="http://localhost:5173/{{stage}}/w.js", encoding="none")), id="url"),
    pytest.param(tag_payload(canBeGeneratedByLlm=False, llmInstructionsMd=None), id="no-instructions-when-not-generated"),
    pytest.param(
        tag_payload(llmInstructionsMd=None, llmInstructions=[{"type": "line", "text": "Use it"}]), id="structured-instructions-suffice"
    ),
    pytest.param(tag_payload(renderingContexts={}), id="no-context"),
    pytest.param(
        tag_payload(
            renderingContexts={
                "spotlight": {"enabled": True, "isDefault": True, "displayOrder": -1.5, "singleton": False, "showInUnpinnedMenu": True},
                "static": {"enabled": True, "shutDownAfterMs": 0},
                "hero": {
                    "enabled": True,
                    "autoCreateInstance": False,
                    "startCollapsed": True,
                    "sizing": {
                        "width": "50%",
                        "height": "20rem",
                        "minWidth": "200px",
                        "maxWidth": "calc(100% - 2rem)",
                        "minHeight": 100,
                        "maxHeight": 600,
                    },
                },
            }
        ),
        id="every-option",
    ),
]


@pytest.mark.parametrize("definition", ACCEPTED)
def test_valid_tag_definition_is_accepted(admin_client, definition):
    response = admin_client.post(UPSERT, {"tagDefinition": definition, "userId": "ops"}, format="json")
    assert response.status_code == 200, response.json()
    assert TagDefinition.objects.count() == 1
