"""XML strings to Yjs XML nodes and back: parsed safely (defusedxml), rendered canonically."""

import re
from typing import Any
from xml.dom import Node
from xml.parsers.expat import ErrorString, ExpatError

from defusedxml.common import DefusedXmlException
from defusedxml.expatbuilder import parseString
from pycrdt import XmlElement, XmlFragment, XmlText

MAX_DEPTH = 100
_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_ROOT = "crdt-root"


class BadXml(ValueError):
    """The string is not XML this service stores."""


# A parsed node: a text, or (tag, attributes, children). Plain data, so it can be compared and built twice.
Parsed = str | tuple[str, dict[str, str], list]


def parse(text: str) -> list[Parsed]:
    """Parse an XML fragment (any number of elements and text nodes) into plain nodes."""
    body = _DECLARATION.sub("", text, count=1)
    try:
        # Prefixes stay part of the names (no namespace processing): Yjs node names are plain strings.
        dom = parseString(f"<{_ROOT}>{body}</{_ROOT}>", namespaces=False, forbid_dtd=True)
    except ExpatError as exc:
        # Positions would point into the wrapped text, not the client's: name the problem only.
        raise BadXml(f"Data is not valid XML: {ErrorString(exc.code)}.") from exc
    except DefusedXmlException as exc:
        raise BadXml(f"Data is not valid XML: {type(exc).__name__}.") from exc
    try:
        return _children(dom.documentElement, 1)
    finally:
        dom.unlink()


def _children(parent: Any, depth: int) -> list[Parsed]:
    if depth > MAX_DEPTH:
        raise BadXml(f"Data is XML nested deeper than {MAX_DEPTH} levels.")
    nodes: list[Parsed] = []
    for child in parent.childNodes:
        if child.nodeType in (Node.TEXT_NODE, Node.CDATA_SECTION_NODE):
            if nodes and isinstance(nodes[-1], str):
                nodes[-1] += child.data  # text and CDATA side by side are one text
            else:
                nodes.append(child.data)
        elif child.nodeType == Node.ELEMENT_NODE:
            nodes.append((child.tagName, dict(child.attributes.items()), _children(child, depth + 1)))
        # Comments and processing instructions have no Yjs node: they are dropped.
    return nodes


def build(node: Parsed) -> XmlElement | XmlText:
    """An unattached Yjs node for a parsed one."""
    if isinstance(node, str):
        return XmlText(node)
    tag, attributes, children = node
    return XmlElement(tag, attributes, [build(child) for child in children])


def dump(node: Parsed) -> str:
    """A parsed node as render() writes the Yjs node that build() makes of it."""
    if isinstance(node, str):
        return escape_text(node)
    tag, attributes, children = node
    return f"<{tag}{_attributes(attributes)}>{''.join(dump(child) for child in children)}</{tag}>"


def render(node: XmlFragment | XmlElement | XmlText) -> str:
    """A node as an XML string: attributes sorted by name, text escaped, empty elements as <a></a>."""
    return "".join(_render(node, 0))


def _render(node: Any, depth: int) -> list[str]:
    if depth > MAX_DEPTH:
        raise BadXml(f"The document holds XML nested deeper than {MAX_DEPTH} levels.")
    if isinstance(node, XmlText):
        return [_formatted(chunk, attrs) for chunk, attrs in node.diff() if isinstance(chunk, str)]
    if isinstance(node, XmlFragment):
        return [part for child in node.children for part in _render(child, depth + 1)]
    parts = [f"<{node.tag}{_attributes(dict(node.attributes))}>"]
    for child in node.children:
        parts += _render(child, depth + 1)
    parts.append(f"</{node.tag}>")
    return parts


def _formatted(text: str, attrs: dict[str, Any] | None) -> str:
    # Formatting that a Yjs editor put on text renders as Yjs renders it: one element per attribute.
    shown = attrs or {}
    names = sorted(shown)
    opened = "".join(f"<{n}{_attributes(shown[n]) if isinstance(shown[n], dict) else ''}>" for n in names)
    closed = "".join(f"</{n}>" for n in reversed(names))
    return opened + escape_text(text) + closed


def _attributes(attrs: dict[str, Any]) -> str:
    pairs = sorted(attrs.items())
    return "".join(f' {k}="{escape_attribute(v if isinstance(v, str) else _plain(v))}"' for k, v in pairs)


def _plain(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def escape_text(text: str) -> str:
    # A parser would turn a bare \r into \n: keep it as a character reference.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def escape_attribute(text: str) -> str:
    # Whitespace in attribute values is normalised by parsers unless written as references.
    return escape_text(text).replace('"', "&quot;").replace("\n", "&#10;").replace("\t", "&#9;")
