"""Files attached to messages (docs/api.md): `POST /api/chat/files`, `GET /api/chat/files/{fileId}`
and `.../content`, the checks a turn makes on a converse body's `files`, and what a model gets."""

from __future__ import annotations

import uuid
from pathlib import Path

import boto3
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from moto import mock_aws

from chat.chat_apps.selectors import chat_app_features, chat_app_get
from chat.files.content import model_input
from chat.files.models import ChatFile
from chat.files.selectors import file_model_input, message_files
from chat.files.serializers import ChatMessageFileSerializer
from chat.users.models import ChatUser
from chatplatform.api.errors import InvalidRequest, NotFound
from tests.conftest import assert_error
from tests.factories import ChatAppFactory
from tests.pages.test_files import png

pytestmark = pytest.mark.django_db

UPLOADS = {"fileUpload": {"enabled": True, "mimeTypesAllowed": ["text/plain", "image/*"]}}


@pytest.fixture(autouse=True)
def _local_storage(settings, tmp_path: Path) -> Path:
    settings.STORAGES = {
        **settings.STORAGES,
        "chat_files": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": tmp_path}},
    }
    settings.CHAT_SITE_FEATURES = {}
    return tmp_path


def upload(client, name: str = "notes.txt", content: bytes = b"hello\n", mime_type: str = "text/plain", chat_app_id: str = "files"):
    return client.post(
        "/api/chat/files", {"chatAppId": chat_app_id, "file": SimpleUploadedFile(name, content, content_type=mime_type)}, format="multipart"
    )


def test_an_upload_is_stored_and_read_back_by_its_owner_only(user_client, client_for, _local_storage):
    ChatAppFactory(chat_app_id="files", features=UPLOADS)
    response = upload(user_client, "../../etc/notes.txt")
    assert response.status_code == 200, response.json()
    file = response.json()["file"]
    assert set(file) == {"fileId", "fileName", "mimeType", "size", "url"}
    assert (file["fileName"], file["mimeType"], file["size"]) == ("notes.txt", "text/plain", 6)
    assert file["url"] == f"/api/chat/files/{file['fileId']}/content"
    stored = list(_local_storage.iterdir())
    assert [path.name for path in stored] == [uuid.UUID(file["fileId"]).hex]  # a name of the id only

    assert user_client.get(f"/api/chat/files/{file['fileId']}").json()["file"] == file
    content = user_client.get(file["url"])
    assert content.status_code == 200
    assert content.content == b"hello\n"
    assert content["Content-Type"].startswith("text/plain")
    assert content["Content-Disposition"] == 'attachment; filename="notes.txt"'
    assert content["Content-Security-Policy"] == "default-src 'none'; sandbox"

    stranger = client_for("mallory")
    assert_error(stranger.get(file["url"]), 404, "NOT_FOUND")
    assert_error(stranger.get(f"/api/chat/files/{file['fileId']}"), 404, "NOT_FOUND")
    assert_error(client_for("root", admin=True).get(file["url"]), 404, "NOT_FOUND")  # never readable by anyone else
    assert_error(user_client.get("/api/chat/files/not-a-uuid/content"), 404, "NOT_FOUND")


def test_a_raster_image_is_shown_inline_and_its_bytes_must_be_an_image(user_client):
    ChatAppFactory(chat_app_id="files", features=UPLOADS)
    image = upload(user_client, "dot.png", png(), "image/png").json()["file"]
    assert user_client.get(image["url"])["Content-Disposition"] == 'inline; filename="dot.png"'
    assert_error(
        upload(user_client, "fake.png", b"<svg onload=alert(1)>", "image/png"), 400, "INVALID_REQUEST", mentions="file: is not a PNG image"
    )
    # An SVG is an image/* the app allows, but it is never shown inline: it could run script.
    svg = upload(user_client, "drawing.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml").json()["file"]
    assert user_client.get(svg["url"])["Content-Disposition"].startswith("attachment")


@pytest.mark.parametrize(
    ("features", "name", "mime_type", "content", "message"),
    [
        ({}, "notes.txt", "text/plain", b"hi", "chatAppId: file upload is not enabled in chat app files"),
        ({"fileUpload": {"enabled": False, "mimeTypesAllowed": ["text/plain"]}}, "notes.txt", "text/plain", b"hi", "not enabled"),
        (
            UPLOADS,
            "page.html",
            "text/html",
            b"<p>",
            "file: text/html files are not allowed in this chat app (allowed: text/plain, image/*)",
        ),
        (UPLOADS, "notes.txt", "text/plain", b"\xff\xfe\x00bad", "file: is not UTF-8 text"),
        (UPLOADS, "empty.txt", "text/plain", b"", "file: The submitted file is empty."),
        # Without a declared type the name decides.
        (UPLOADS, "script.js", "application/octet-stream", b"alert(1)", "file: text/javascript files are not allowed"),
    ],
)
def test_a_file_the_chat_app_does_not_take_is_refused_naming_the_rule(
    user_client, features, name, mime_type, content, message, _local_storage
):
    ChatAppFactory(chat_app_id="files", features=features)
    assert_error(upload(user_client, name, content, mime_type), 400, "INVALID_REQUEST", mentions=message)
    assert not ChatFile.objects.exists()
    assert list(_local_storage.iterdir()) == []


def test_the_site_wide_feature_applies_when_the_app_says_nothing(user_client, settings):
    settings.CHAT_SITE_FEATURES = {"fileUpload": {"enabled": True}}  # without a list: the default types
    ChatAppFactory(chat_app_id="files")
    assert upload(user_client).status_code == 200
    assert_error(upload(user_client, "a.pdf", b"%PDF-1.4", "application/pdf"), 400, mentions="application/pdf files are not allowed")


def test_a_file_over_the_size_limit_is_refused_with_413(user_client, settings, _local_storage):
    settings.CHAT_UPLOAD_MAX_BYTES = 10
    ChatAppFactory(chat_app_id="files", features=UPLOADS)
    assert_error(upload(user_client, content=b"x" * 11), 413, "PAYLOAD_TOO_LARGE", mentions="must be at most 10 bytes")
    assert upload(user_client, content=b"x" * 10).status_code == 200


def test_the_chat_app_must_exist_and_be_open_to_the_uploader(user_client):
    assert_error(upload(user_client, chat_app_id="nowhere"), 404, "INVALID_CHAT_APP_ID")
    ChatAppFactory(chat_app_id="files", features=UPLOADS, user_types=["internal-user"])
    assert_error(upload(user_client), 403, "INSUFFICIENT_PERMISSIONS")


def test_the_body_must_be_multipart_with_a_file(user_client):
    ChatAppFactory(chat_app_id="files", features=UPLOADS)
    assert_error(user_client.post("/api/chat/files", {"chatAppId": "files"}, format="json"), 415, "UNSUPPORTED_MEDIA_TYPE")
    assert_error(
        user_client.post("/api/chat/files", {"chatAppId": "files"}, format="multipart"), 400, mentions="file: No file was submitted."
    )


def test_bytes_written_for_a_record_that_fails_are_removed(user_client, monkeypatch, _local_storage):
    ChatAppFactory(chat_app_id="files", features=UPLOADS)

    def refuse(*args, **kwargs):  # the database fails the write (fault injection: nothing else is replaced)
        raise RuntimeError("database gone")

    monkeypatch.setattr(ChatFile.objects, "create", refuse)
    assert_error(upload(user_client), 500, "INTERNAL_ERROR")
    assert list(_local_storage.iterdir()) == []


def test_deleting_a_file_record_deletes_its_bytes_once_the_delete_commits(user_client, _local_storage, django_capture_on_commit_callbacks):
    ChatAppFactory(chat_app_id="files", features=UPLOADS)
    upload(user_client)
    with django_capture_on_commit_callbacks(execute=True):
        ChatUser.objects.get(user_id="alice").delete()
        assert len(list(_local_storage.iterdir())) == 1  # a delete that rolls back keeps the record's bytes
    assert list(_local_storage.iterdir()) == []


def test_files_are_stored_in_an_s3_bucket_when_one_is_configured(user_client, settings, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="chat-files-test")
        settings.STORAGES = {
            **settings.STORAGES,
            "chat_files": {
                "BACKEND": "storages.backends.s3.S3Storage",
                "OPTIONS": {"bucket_name": "chat-files-test", "location": "chat-files", "default_acl": None},
            },
        }
        ChatAppFactory(chat_app_id="files", features=UPLOADS)
        file = upload(user_client, content=b"in the bucket").json()["file"]
        keys = [item["Key"] for item in boto3.client("s3", region_name="us-east-1").list_objects_v2(Bucket="chat-files-test")["Contents"]]
        assert keys == [f"chat-files/{uuid.UUID(file['fileId']).hex}"]
        assert user_client.get(file["url"]).content == b"in the bucket"


# --- what the turn calls (the lead wires it into the turn) ---------------------------------------


def test_the_files_of_a_converse_body_are_the_callers_and_allowed(user_client):
    ChatAppFactory(chat_app_id="files", features=UPLOADS)
    alice = ChatUser.objects.get_or_create(user_id="alice")[0]
    notes = upload(user_client).json()["file"]
    image = upload(user_client, "dot.png", png(), "image/png").json()["file"]
    features = chat_app_features(chat_app_get(chat_app_id="files"))

    files = message_files(user=alice, files=[image, {"fileId": notes["fileId"]}], features=features)
    assert ChatMessageFileSerializer(files, many=True).data == [image, notes]
    assert message_files(user=alice, files=[], features={}) == []

    with pytest.raises(InvalidRequest, match=r"files: file upload is not enabled"):
        message_files(user=alice, files=[notes], features={})
    with pytest.raises(InvalidRequest, match=r"files\[0\]\.fileId: must be the fileId of an uploaded file"):
        message_files(user=alice, files=[{"fileName": "x"}], features=features)
    with pytest.raises(InvalidRequest, match=r"files\[1\]: names file .* a second time"):
        message_files(user=alice, files=[notes, notes], features=features)
    mallory = ChatUser.objects.create_user("mallory")
    with pytest.raises(NotFound, match=r"files\[0\]: file .* not found"):
        message_files(user=mallory, files=[notes], features=features)
    narrower = {"fileUpload": {"enabled": True, "mimeTypesAllowed": ["text/plain"]}}
    with pytest.raises(InvalidRequest, match=r"files\[0\]: image/png files are not allowed"):
        message_files(user=alice, files=[image], features=narrower)


def test_a_model_gets_text_as_text_and_images_as_image_input(user_client):
    ChatAppFactory(chat_app_id="files", features=UPLOADS)
    upload(user_client, content="héllo\n".encode())
    upload(user_client, "dot.png", png(), "image/png")
    alice = ChatUser.objects.get(user_id="alice")
    text, image = (file_model_input(file) for file in ChatFile.objects.filter(user=alice).order_by("create_date"))
    assert (text.kind, text.text, text.data) == ("text", "héllo\n", None)
    assert (image.kind, image.mime_type, image.data) == ("image", "image/png", png())
    assert model_input(file_name="a.pdf", mime_type="application/pdf", content=b"%PDF").kind == "other"


def test_an_operator_lists_files_in_the_django_admin_and_deleting_one_deletes_its_bytes(
    user_client, _local_storage, django_capture_on_commit_callbacks
):
    ChatAppFactory(chat_app_id="files", features=UPLOADS)
    file = upload(user_client, "report.txt").json()["file"]
    staff = Client()
    staff.force_login(ChatUser.objects.create_superuser("operator", "correct horse battery"))
    assert "report.txt" in staff.get("/admin/chat/chatfile/").content.decode()
    assert staff.get("/admin/chat/chatfile/add/").status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        assert staff.post(f"/admin/chat/chatfile/{file['fileId']}/delete/", {"post": "yes"}).status_code == 302
    assert not ChatFile.objects.exists()
    assert list(_local_storage.iterdir()) == []
