"""The backend's state: users, products, orders, inventory, refunds, tickets,
reservations and messages, generated from a seed.

Money is integer cents so refund amounts compare exactly. ``created`` is a global day
counter: a user's orders are listed oldest first, so "the latest order" is on the last
page of ``list_orders``. Each order also has a ``replica_status`` and each product a
``replica_inventory`` count: what a lagging read replica reports (a recently shipped
order still shows "placed"). Stale-read faults serve reads from that replica, so a stale
read can mislead an agent without ever changing the true state.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from suites.toolsim.seeding import Draw

ORDER_STATUSES = ("placed", "shipped", "delivered", "cancelled")
PRODUCT_NAMES = (
    "Desk Lamp", "Wool Scarf", "Coffee Grinder", "Trail Backpack", "Ceramic Mug",
    "Yoga Mat", "Bluetooth Speaker", "Cast Iron Pan", "Rain Jacket", "Chess Set",
    "Water Bottle", "Reading Glasses", "Garden Hose", "Phone Charger", "Tea Kettle",
    "Picture Frame", "Running Shoes", "Wall Clock", "Bath Towel", "Pocket Knife",
)
"""Unique names, none a substring of another, so a search by full name finds one product."""
CATEGORIES = ("home", "outdoor", "kitchen", "apparel", "electronics")
FIRST_NAMES = ("Ada", "Bruno", "Chen", "Dara", "Elif", "Femi", "Greta", "Hugo", "Ines", "Jonas", "Kemal", "Lena")
LAST_NAMES = ("Park", "Silva", "Okafor", "Novak", "Haddad", "Lund", "Moreau", "Tanaka", "Rossi", "Weber")
STREETS = ("Elm St", "Harbor Rd", "Mill Lane", "Oak Ave", "Station Sq", "Canal Walk")
CITIES = ("Springfield", "Riverton", "Lakeside", "Fairview", "Hillcrest")
COUPONS = {"SAVE10": 10, "WELCOME15": 15, "SPRING20": 20}
"""Coupon code -> percent off the order total."""
N_USERS, N_PRODUCTS = 8, 12


@dataclass
class User:
    user_id: str
    name: str
    email: str
    alias: str
    """A secondary address: ``find_user_by_email`` indexes only ``email``."""
    tier: str  # "standard" or "vip"
    address: dict[str, str]


@dataclass(frozen=True)
class Product:
    product_id: str
    name: str
    price: int  # cents
    category: str


@dataclass(frozen=True)
class LineItem:
    product_id: str
    name: str
    qty: int
    price: int  # cents per unit


@dataclass
class Order:
    order_id: str
    user_id: str
    created: int
    status: str
    items: list[LineItem]
    shipping_address: dict[str, str]
    coupon: str | None = None
    replica_status: str = ""
    """What the lagging replica reports; set to ``status`` when left empty."""

    def __post_init__(self) -> None:
        self.replica_status = self.replica_status or self.status


@dataclass(frozen=True)
class Refund:
    refund_id: str
    order_id: str
    product_id: str | None  # None: the whole order
    amount: int
    reason: str


@dataclass
class Ticket:
    ticket_id: str
    user_id: str
    subject: str
    order_id: str | None
    product_id: str | None
    status: str  # "open" or "escalated"


@dataclass(frozen=True)
class Reservation:
    reservation_id: str
    user_id: str
    product_id: str
    qty: int


@dataclass(frozen=True)
class Message:
    user_id: str
    text: str


@dataclass
class World:
    users: dict[str, User]
    products: dict[str, Product]
    orders: dict[str, Order]
    inventory: dict[str, int]
    replica_inventory: dict[str, int]
    coupons: dict[str, int] = field(default_factory=lambda: dict(COUPONS))
    refunds: list[Refund] = field(default_factory=list)
    tickets: dict[str, Ticket] = field(default_factory=dict)
    reservations: list[Reservation] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)

    def clone(self) -> World:
        """An independent copy (records that are never mutated are frozen and shared).
        Far cheaper than ``copy.deepcopy``, which dominated an episode's cost."""
        return World(
            users={k: replace(u, address=dict(u.address)) for k, u in self.users.items()},
            products=dict(self.products),
            orders={k: replace(o, items=list(o.items), shipping_address=dict(o.shipping_address))
                    for k, o in self.orders.items()},
            inventory=dict(self.inventory),
            replica_inventory=dict(self.replica_inventory),
            coupons=dict(self.coupons),
            refunds=list(self.refunds),
            tickets={k: replace(t) for k, t in self.tickets.items()},
            reservations=list(self.reservations),
            messages=list(self.messages),
        )

    def orders_of(self, user_id: str) -> list[Order]:
        """A user's orders, oldest first: the order ``list_orders`` pages through."""
        return sorted((o for o in self.orders.values() if o.user_id == user_id), key=lambda o: o.created)

    def order_subtotal(self, order: Order) -> int:
        return sum(item.qty * item.price for item in order.items)

    def discounted(self, order: Order, cents: int) -> int:
        """``cents`` after the order's coupon (floor to whole cents)."""
        percent = self.coupons.get(order.coupon, 0) if order.coupon else 0
        return cents * (100 - percent) // 100

    def order_total(self, order: Order) -> int:
        return self.discounted(order, self.order_subtotal(order))

    def refunded(self, order_id: str) -> int:
        return sum(r.amount for r in self.refunds if r.order_id == order_id)

    def user_by_email(self, email: str) -> User | None:
        """The user whose primary email or alias is ``email`` (what a human would find)."""
        for user in self.users.values():
            if email in (user.email, user.alias):
                return user
        return None

    def product_by_name(self, name: str) -> Product:
        return next(p for p in self.products.values() if p.name == name)

    def next_created(self) -> int:
        return max((o.created for o in self.orders.values()), default=0) + 1

    def new_order_id(self) -> str:
        return f"o{len(self.orders) + 1:04d}"


def random_address(draw: Draw) -> dict[str, str]:
    return {
        "street": f"{draw.integer(1, 999)} {draw.choice(STREETS)}",
        "city": draw.choice(CITIES),
        "zip": f"{draw.integer(10000, 99999)}",
    }


def random_items(world: World, draw: Draw, exclude: tuple[str, ...] = ()) -> list[LineItem]:
    """One to three distinct products, none in ``exclude``."""
    pool = [p for p in world.products.values() if p.product_id not in exclude]
    return [
        LineItem(p.product_id, p.name, draw.integer(1, 3), p.price)
        for p in draw.sample(pool, draw.integer(1, 3))
    ]


def add_order(world: World, draw: Draw, user_id: str, status: str, items: list[LineItem] | None = None) -> Order:
    """A new order for ``user_id``, created after every existing order."""
    order = Order(
        order_id=world.new_order_id(),
        user_id=user_id,
        created=world.next_created(),
        status=status,
        items=items if items is not None else random_items(world, draw),
        shipping_address=dict(world.users[user_id].address),
    )
    world.orders[order.order_id] = order
    return order


def lag_replica(order: Order) -> None:
    """Make the replica report the order's previous status (a recent transition)."""
    previous = {"shipped": "placed", "delivered": "shipped", "cancelled": "placed"}
    order.replica_status = previous.get(order.status, order.status)


def generate_world(draw: Draw) -> World:
    """A small shop: 8 users (about a quarter VIP), 12 products, 1-4 orders per user,
    inventory 0-12 per product, and a replica that lags on about 30% of records."""
    names = draw.sample(PRODUCT_NAMES, N_PRODUCTS)
    products = {
        f"p{i + 1:02d}": Product(f"p{i + 1:02d}", name, draw.integer(5, 150) * 100 - 1, draw.choice(CATEGORIES))
        for i, name in enumerate(names)
    }
    users = {}
    for i, (first, last) in enumerate(zip(draw.sample(FIRST_NAMES, N_USERS), draw.sample(LAST_NAMES, N_USERS))):
        user_id = f"u{i + 1:02d}"
        users[user_id] = User(
            user_id=user_id,
            name=f"{first} {last}",
            email=f"{first.lower()}.{last.lower()}@example.com",
            alias=f"{first.lower()}{draw.integer(10, 99)}@mail.test",
            tier="vip" if draw.chance(0.25) else "standard",
            address=random_address(draw),
        )
    inventory = {pid: draw.integer(0, 12) for pid in products}
    replica = {pid: (draw.integer(0, 12) if draw.chance(0.3) else count) for pid, count in inventory.items()}
    world = World(users, products, {}, inventory, replica)
    for user_id in users:
        for _ in range(draw.integer(1, 4)):
            order = add_order(world, draw, user_id, draw.choice(ORDER_STATUSES))
            if draw.chance(0.3):
                lag_replica(order)
    return world
